"""A fake financial-data HTTP server for offline tests (stdlib only).

One server answers for every source, since their paths do not collide: point
``FINANCIAL_DATASETS_BASE_URL``, ``SEC_EDGAR_BASE_URL``, ``SEC_EDGAR_DATA_URL`` and
``YAHOO_CHART_BASE_URL`` at ``server.url`` (``point_settings_at`` does). Yahoo's
``/v8/finance/chart/{SYMBOL}`` serves the real recorded replies in
``tests/fixtures/prices-real/``. Routes map a path to a JSON body, raw text/bytes, a ``Response``, a list of
``Response`` (served in order, the last one repeats) or a handler ``f(request) ->
Response``. Unrouted paths go to ``fallback`` (the bundled fixtures by default). Every
request is recorded; a delayed response notices when the client hangs up (``disconnects``).

In-process::

    with FakeDataServer({"/prices/snapshot/": Response(402)}) as server:
        ...  # server.url, server.requests

Harness mode (serves the bundled fixtures until killed)::

    python -m dexter.testing.fakedata --port 0 --port-file PORT [--fixtures DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias
from urllib.parse import parse_qs, unquote, urlsplit

from dexter.testing.server import BackgroundServer

if TYPE_CHECKING:
    from dexter.config import Settings

DEFAULT_FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "finance"
REAL_PRICES = DEFAULT_FIXTURES.parent / "prices-real" / "query1.finance.yahoo.com"
YAHOO_CHART_PATH = "/v8/finance/chart/"


@dataclass
class Response:
    """A scripted response. ``body``: dict/list -> JSON, str/bytes -> sent as is."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str | None = None

    def encode(self) -> tuple[bytes, str]:
        """The body bytes and their content type."""
        if isinstance(self.body, bytes):
            return self.body, self.content_type or "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), self.content_type or "text/html; charset=utf-8"
        if self.body is None and self.status >= 400:
            payload: Any = {"error": f"fakedata scripted HTTP {self.status}"}
        else:
            payload = self.body
        return json.dumps(payload).encode(), self.content_type or "application/json"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float

    def param(self, name: str) -> str | None:
        """The first value of a query parameter."""
        values = self.query.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        """The request body parsed as JSON."""
        return json.loads(self.body or b"null")


Handler: TypeAlias = Callable[[RecordedRequest], Response]
RouteValue: TypeAlias = Response | Handler | list[Response] | dict[str, Any] | list[Any] | str | bytes


def _to_response(value: Any, request: RecordedRequest) -> Response:
    if isinstance(value, Response):
        return value
    if callable(value):
        result = value(request)
        return result if isinstance(result, Response) else Response(body=result)
    return Response(body=value)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeDataServer


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=method, path=split.path, query=parse_qs(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()}, body=body, at=time.monotonic(),
        )
        owner = self.server.owner
        owner._record(request)
        try:
            response = owner._respond(request)
        except Exception as exc:  # a broken handler must show up as a 500, not a hang
            response = Response(500, {"error": f"fakedata handler failed: {exc!r}"})
        if response.delay and not self._wait(response.delay):
            owner._disconnected(request)
            self.close_connection = True
            return
        payload, content_type = response.encode()
        try:
            self.send_response(response.status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            for key, value in response.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            owner._disconnected(request)
            self.close_connection = True

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; False as soon as the client closes the connection."""
        deadline = time.monotonic() + seconds
        conn: socket.socket = self.connection
        while time.monotonic() < deadline:
            readable, _, _ = select.select([conn], [], [], 0.02)
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
        return True


class FakeDataServer(BackgroundServer):
    """A threaded HTTP server on 127.0.0.1 serving scripted routes."""

    def __init__(
        self,
        routes: Mapping[str, RouteValue] | None = None,
        *,
        fallback: Handler | None = None,
        fixtures: Path | None = None,
        port: int = 0,
    ) -> None:
        self._routes: dict[str, RouteValue] = dict(routes or {})
        self._cursor: dict[str, int] = {}
        self._fallback = fallback or BundledFixtures(fixtures or DEFAULT_FIXTURES)
        self._port = port
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[RecordedRequest] = []
        self._server: _Server | None = None

    # lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeDataServer:
        """Bind and serve in a background thread."""
        server = _Server(("127.0.0.1", self._port), _RequestHandler)
        server.owner = self
        self._serve_in_background(server, "fakedata")
        return self

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("FakeDataServer is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    # routes and log ---------------------------------------------------------------------

    def route(self, path: str, value: RouteValue) -> None:
        """Add or replace a route; a list of responses restarts from its first item."""
        with self._lock:
            self._routes[path] = value
            self._cursor.pop(path, None)

    def requests_for(self, path: str) -> list[RecordedRequest]:
        """Requests whose path equals ``path``."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def clear(self) -> None:
        """Forget recorded requests."""
        with self._lock:
            self.requests.clear()
            self.disconnects.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _disconnected(self, request: RecordedRequest) -> None:
        with self._lock:
            self.disconnects.append(request)

    def _respond(self, request: RecordedRequest) -> Response:
        with self._lock:
            value = self._routes.get(request.path)
            if isinstance(value, list) and value and all(isinstance(v, Response) for v in value):
                index = self._cursor.get(request.path, 0)
                self._cursor[request.path] = index + 1
                value = value[min(index, len(value) - 1)]
        if value is None:
            return self._fallback(request)
        return _to_response(value, request)


# --------------------------------------------------------------------------------------------
# Bundled fixtures
# --------------------------------------------------------------------------------------------


def _not_found(what: str) -> Response:
    return Response(404, {"error": f"{what} not found"})


class BundledFixtures:
    """Serves ``tests/fixtures/finance``: SEC EDGAR files and a Financial Datasets mock that
    filters its records by ticker, period, report period bounds and limit, as the API does."""

    FD_LISTS: ClassVar[dict[str, tuple[str, str]]] = {
        "/financials/income-statements/": ("income_statements", "income_statements"),
        "/financials/balance-sheets/": ("balance_sheets", "balance_sheets"),
        "/financials/cash-flow-statements/": ("cash_flow_statements", "cash_flow_statements"),
        "/financial-metrics/": ("financial_metrics", "financial_metrics"),
        "/financials/segments/": ("segmented_financials", "segmented_financials"),
        "/earnings": ("earnings", "earnings"),
        "/prices/": ("prices", "prices"),
        "/crypto/prices/": ("crypto_prices", "prices"),
        "/news": ("news", "news"),
        "/insider-trades/": ("insider_trades", "insider_trades"),
        "/insider-ownership/": ("insider_ownership", "insider_ownership"),
        "/institutional-holdings/": ("institutional_holdings", "institutional_holdings"),
        "/beneficial-ownership/": ("beneficial_owners", "beneficial_owners"),
        "/filings/": ("filings", "filings"),
    }
    FD_OBJECTS: ClassVar[dict[str, tuple[str, str]]] = {
        "/company/facts/": ("company_facts", "company_facts"),
        "/financial-metrics/snapshot/": ("metrics_snapshot", "snapshot"),
        "/prices/snapshot/": ("price_snapshot", "snapshot"),
        "/crypto/prices/snapshot/": ("crypto_snapshot", "snapshot"),
        "/prices/snapshot/tickers/": ("stock_tickers", "tickers"),
        "/crypto/prices/tickers/": ("crypto_tickers", "tickers"),
        "/insider-trades/names/": ("insider_names", "names"),
        "/institutional-holdings/investors": ("investors", "investors"),
        "/beneficial-ownership/filers/": ("filers", "filers"),
    }
    FD_TICKERS = frozenset({"AAPL", "BTC-USD", "ETH-USD"})

    def __init__(self, root: Path) -> None:
        self.root = root

    def _json(self, *parts: str) -> Any:
        path = self.root.joinpath(*parts)
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def __call__(self, request: RecordedRequest) -> Response:
        path = request.path
        if path in self.FD_LISTS or path in self.FD_OBJECTS or path.startswith(
                ("/filings/items", "/financials/")):
            return self._financial_datasets(request)
        if path.startswith(YAHOO_CHART_PATH):
            return yahoo_chart(request)
        return self._edgar(request)

    # SEC EDGAR --------------------------------------------------------------------------

    def _edgar(self, request: RecordedRequest) -> Response:
        if not request.headers.get("user-agent"):
            return Response(403, "<html>Your request has been identified as automated</html>")
        path = request.path
        if path == "/files/company_tickers.json":
            return Response(body=self._json("edgar", "company_tickers.json"))
        if m := re.fullmatch(r"/submissions/(CIK\d{10})\.json", path):
            body = self._json("edgar", f"submissions_{m.group(1)}.json")
            return Response(body=body) if body is not None else _not_found(m.group(1))
        if m := re.fullmatch(r"/submissions/(CIK\d{10}-submissions-\d{3}\.json)", path):
            body = self._json("edgar", m.group(1))
            return Response(body=body) if body is not None else _not_found(m.group(1))
        if m := re.fullmatch(r"/api/xbrl/companyfacts/(CIK\d{10})\.json", path):
            body = self._json("edgar", f"companyfacts_{m.group(1)}.json")
            return Response(body=body) if body is not None else _not_found(m.group(1))
        if m := re.fullmatch(r"/api/xbrl/frames/us-gaap/(\w+)/([\w-]+)/(\w+)\.json", path):
            body = self._json("edgar", f"frame_{m.group(1)}_{m.group(2)}_{m.group(3)}.json")
            return Response(body=body) if body is not None else _not_found("frame")
        if m := re.fullmatch(r"/Archives/edgar/data/\d+/(\d{18})/index\.json", path):
            body = self._json("edgar", f"index_{m.group(1)}.json")
            return Response(body=body) if body is not None else _not_found("index")
        if m := re.fullmatch(r"/Archives/edgar/data/\d+/\d{18}/([\w.-]+\.html?)", path):
            doc = self.root / "edgar" / m.group(1)
            if doc.is_file():
                return Response(body=doc.read_text(encoding="utf-8"))
        return _not_found(path)

    # Financial Datasets -----------------------------------------------------------------

    def _financial_datasets(self, request: RecordedRequest) -> Response:
        if not request.headers.get("x-api-key"):
            return Response(401, {"error": "Missing API key"})
        path = request.path
        ticker = (request.param("ticker") or "").upper()
        if ticker and ticker not in self.FD_TICKERS:
            return Response(404, {"error": f"Ticker {ticker} not found"})
        if path in self.FD_OBJECTS:
            name, key = self.FD_OBJECTS[path]
            return Response(body={key: self._json("fd", f"{name}.json")})
        if path in self.FD_LISTS:
            name, key = self.FD_LISTS[path]
            rows = self._json("fd", f"{name}.json") or []
            return Response(body={key: self._filter(rows, request)})
        if path == "/financials/":
            return Response(body={"financials": {
                key: self._filter(self._json("fd", f"{key}.json") or [], request)
                for key in ("income_statements", "balance_sheets", "cash_flow_statements")}})
        if path == "/filings/items/":
            return Response(body=self._json("fd", "filing_items.json"))
        if path == "/financials/search/screener/filters/":
            return Response(body=self._json("fd", "screener_filters.json"))
        if path == "/financials/search/screener/" and request.method == "POST":
            return Response(body=self._json("fd", "screener_results.json"))
        return _not_found(path)

    @staticmethod
    def _filter(rows: list[dict[str, Any]], request: RecordedRequest) -> list[dict[str, Any]]:
        out = []
        period = request.param("period")
        for row in rows:
            if period and row.get("period") not in (None, period):
                continue
            date = str(row.get("report_period") or row.get("filing_date") or "")
            ok = True
            for prefix in ("report_period", "filing_date"):
                for op, test in (("gte", date.__ge__), ("gt", date.__gt__),
                                 ("lte", date.__le__), ("lt", date.__lt__)):
                    bound = request.param(f"{prefix}_{op}")
                    if bound and not test(bound):
                        ok = False
            name = request.param("name")
            if name and row.get("name") not in (None, name):
                ok = False
            if ok:
                out.append(row)
        limit = request.param("limit")
        return out[: int(limit)] if limit and limit.isdigit() else out


def yahoo_chart(request: RecordedRequest, root: Path = REAL_PRICES) -> Response:
    """Yahoo's chart endpoint from recorded real replies: the same body whatever the
    window (the caller keeps the bars it asked for). Like Yahoo, it answers 429 to a client
    without a browser-like User-Agent, and an unknown symbol with Yahoo's 404 body."""
    agent = request.headers.get("user-agent", "")
    if not agent or agent.startswith("python-"):
        return Response(429, "Edge: Too Many Requests", content_type="text/plain")
    symbol = unquote(request.path[len(YAHOO_CHART_PATH):])
    if not symbol or "/" in symbol or symbol.startswith("."):
        return _not_found(request.path)
    path = root / "v8" / "finance" / "chart" / f"{symbol}.json"
    if not path.is_file():
        return Response(404, {"chart": {"result": None, "error": {
            "code": "Not Found", "description": "No data found, symbol may be delisted"}}})
    return Response(body=path.read_bytes(), content_type="application/json")


class RecordedTree:
    """Serves recorded real responses laid out by request URL (``<host>/<path>``).

    ``tests/fixtures/sec-real/`` and ``sec-real-more/`` hold real SEC bodies under
    ``www.sec.gov/``, ``data.sec.gov/`` and ``efts.sec.gov/``; their paths do not collide,
    so one server answers for every host. Several roots may be given (searched in order),
    and each root's ``derived/`` tree too (documents cut out of a recorded full submission,
    served at the URL SEC serves them at). A recorded query-string URL is stored as
    ``<path>__<query>.json`` and matches a request with the same parameters in any order.
    Like SEC, it refuses requests without a User-Agent, and it answers a filing folder's
    ``index.json`` (SEC's directory listing) from the files recorded in that folder when
    the listing itself was not recorded. A missing file is a 404.
    """

    HOSTS = ("www.sec.gov", "data.sec.gov", "efts.sec.gov")

    def __init__(self, *roots: Path) -> None:
        self.roots = roots
        self.bases = [b for root in roots for b in (root, root / "derived")]

    def __call__(self, request: RecordedRequest) -> Response:
        if not request.headers.get("user-agent"):
            return Response(403, "<html>Your request has been identified as automated</html>")
        relative = request.path.lstrip("/")
        if ".." in relative.split("/"):
            return _not_found(request.path)
        for base in self.bases:
            for host in self.HOSTS:
                path = self._match(base / host / relative, request.query)
                if path is not None:
                    kind = "application/json" if path.suffix == ".json" else \
                        "text/xml" if path.suffix == ".xml" else "text/html"
                    return Response(body=path.read_bytes(), content_type=kind)
        if relative.endswith("/index.json"):
            listing = self._listing(relative.removesuffix("index.json").rstrip("/"))
            if listing is not None:
                return Response(body=listing)
        return _not_found(request.path)

    @staticmethod
    def _match(path: Path, query: dict[str, list[str]]) -> Path | None:
        if not query:
            return path if path.is_file() else None
        if not path.parent.is_dir():
            return None
        wanted = sorted((k, v) for k, values in query.items() for v in values)
        for candidate in path.parent.glob(f"{path.name}__*.json"):
            stored = candidate.name[len(path.name) + 2:].removesuffix(".json")
            pairs = sorted((k, v) for k, values in parse_qs(stored, keep_blank_values=True)
                           .items() for v in values)
            if pairs == wanted:
                return candidate
        return None

    def _listing(self, folder: str) -> dict[str, Any] | None:
        names: list[str] = []
        for base in self.bases:
            directory = base / "www.sec.gov" / folder
            if directory.is_dir():
                names.extend(p.name for p in sorted(directory.iterdir()) if p.is_file())
        if not names:
            return None
        items = [{"name": n, "type": "text.gif", "size": "", "last-modified": ""}
                 for n in dict.fromkeys(names)]
        return {"directory": {"item": items, "name": f"/{folder}",
                              "parent-dir": "/" + folder.rsplit("/", 1)[0]}}


def point_settings_at(settings: Settings, server: FakeDataServer, home: Path) -> Settings:
    """Aim ``settings`` (a ``dexter.config.Settings``) at ``server`` with ``home`` as
    DEXTER_HOME; returns the same object."""
    settings.home = str(home)
    settings.tools.financial_datasets_base_url = server.url
    settings.tools.sec_edgar_base_url = server.url
    settings.tools.sec_edgar_data_url = server.url
    settings.tools.sec_edgar_fts_url = server.url + "/LATEST"
    settings.tools.yahoo_chart_base_url = server.url
    return settings


# --------------------------------------------------------------------------------------------
# Harness mode
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Serve the bundled fixtures until SIGTERM/SIGINT; write the port to ``--port-file``."""
    parser = argparse.ArgumentParser(
        description="Serve fake Financial Datasets, SEC EDGAR and Yahoo chart data.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    args = parser.parse_args(argv)
    server = FakeDataServer(fixtures=args.fixtures, port=args.port).start()
    stop = threading.Event()

    def _stop(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if args.port_file:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.port))
        tmp.replace(args.port_file)
    print(f"fakedata serving {args.fixtures} on {server.url}", file=sys.stderr, flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

