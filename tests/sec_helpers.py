"""Real recorded SEC responses served over HTTP on 127.0.0.1, and the keyless SEC sources
pointed at them (for the tests of segments, Forms 3/4/5, 13F, releases, search, peers)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from dexter.data.cache import DiskCache
from dexter.data.http import RetryPolicy
from dexter.data.http_source import SourceConnection
from dexter.data.sec import SecSource
from dexter.testing.fakedata import FakeDataServer, RecordedTree

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "sec-real"
MORE = FIXTURES / "sec-real-more"
UA = "dexter-tests tests@example.com"
TODAY = dt.date(2025, 12, 1)

S = TypeVar("S", bound=SecSource)


@pytest.fixture
def sec_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDataServer]:
    """Both recorded trees (sec-real, sec-real-more) by URL path."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeDataServer(fallback=RecordedTree(REAL, MORE)) as server:
        yield server


def sec_source(kind: type[S], server: FakeDataServer, cache_dir: Path | None = None) -> S:
    """A keyless SEC source on the server (no limiter: tests count requests instead)."""
    cache = DiskCache(cache_dir) if cache_dir is not None else None
    return kind(SourceConnection(server.url, cache, rate_limiter=None, today=TODAY,
                                 retry=RetryPolicy(max_retries=0, backoff_base=0.001)),
                data_url=server.url, user_agent=UA, fts_url=server.url + "/LATEST")
