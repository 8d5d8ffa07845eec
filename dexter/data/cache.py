"""A disk cache for data responses under ``DEXTER_HOME/cache``.

Each entry is one JSON file ``<namespace>/<TICKER_><hash>.json`` holding the value, the
request URL and an absolute expiry time (``None`` = never expires, for closed historical
windows and filings fetched by accession number). Keys do not depend on parameter order.
Writes go to a temporary file that is atomically renamed, so concurrent writers never leave
a half-written entry; an unreadable or malformed file is deleted and treated as a miss.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TTL_15M = 15 * 60.0
TTL_1H = 60 * 60.0
TTL_6H = 6 * 60 * 60.0
TTL_24H = 24 * 60 * 60.0
NEVER_EXPIRES: float | None = None

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class CachedValue:
    """A cache hit: the stored value and the URL it was fetched from."""

    value: Any
    url: str


def canonical_key(namespace: str, params: Mapping[str, Any]) -> str:
    """A stable text for ``namespace`` + ``params``: keys sorted, ``None`` dropped,
    list values sorted, so the same request always gives the same key."""
    items: list[tuple[str, Any]] = []
    for key in sorted(params):
        value = params[key]
        if value is None:
            continue
        if isinstance(value, list | tuple):
            value = sorted(str(v) for v in value)
        items.append((key, value))
    return namespace + "?" + json.dumps(items, separators=(",", ":"), default=str)


def is_closed_window(end_date: str | None, today: dt.date | None = None) -> bool:
    """True when an ISO ``end_date`` is before today: such a range can no longer change."""
    if not end_date:
        return False
    try:
        end = dt.date.fromisoformat(end_date[:10])
    except ValueError:
        return False
    return end < (today or dt.date.today())


class DiskCache:
    """JSON-file cache. ``clock`` is injectable so tests can move time forward."""

    def __init__(self, root: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self._clock = clock

    def path_for(self, namespace: str, params: Mapping[str, Any]) -> Path:
        """Where the entry for this request lives."""
        digest = hashlib.sha256(canonical_key(namespace, params).encode()).hexdigest()[:20]
        ticker = params.get("ticker")
        prefix = f"{_SAFE.sub('_', str(ticker).upper())}_" if isinstance(ticker, str) else ""
        folder = _SAFE.sub("_", namespace.strip("/")) or "root"
        return self.root / folder / f"{prefix}{digest}.json"

    def get(self, namespace: str, params: Mapping[str, Any]) -> CachedValue | None:
        """The stored value, or ``None`` when missing, expired or unreadable."""
        path = self.path_for(namespace, params)
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # missing, or damaged: a miss
            return None
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict) or "value" not in entry:
                raise ValueError("malformed entry")
            expires = entry.get("expires_at")
            if expires is not None and not isinstance(expires, int | float):
                raise ValueError("malformed expiry")
            url = str(entry.get("url", ""))
        except (ValueError, RecursionError):
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        if expires is not None and self._clock() >= expires:
            return None
        return CachedValue(entry["value"], url)

    def delete(self, namespace: str, params: Mapping[str, Any]) -> None:
        """Forget the entry (a reply that turned out unusable); missing is fine."""
        with contextlib.suppress(OSError):
            self.path_for(namespace, params).unlink()

    def set(
        self, namespace: str, params: Mapping[str, Any], value: Any, *, url: str,
        ttl: float | None,
    ) -> None:
        """Store ``value``; ``ttl=None`` never expires. Disk errors are swallowed:
        a cache that cannot write only costs a refetch."""
        path = self.path_for(namespace, params)
        now = self._clock()
        entry = {
            "key": canonical_key(namespace, params),
            "url": url,
            "stored_at": now,
            "expires_at": None if ttl is None else now + ttl,
            "value": value,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                # json.dumps, not json.dump: dump streams through the pure-Python encoder,
                # ~8x slower on a company's multi-megabyte facts
                text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return
