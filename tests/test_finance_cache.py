"""The disk cache: hits, expiry, corrupt files, key stability, concurrent writers."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

from dexter.data.cache import DiskCache, canonical_key, is_closed_window


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_hit_then_expiry_after_ttl(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, clock=clock)
    cache.set("fd/prices", {"ticker": "AAPL"}, [1, 2], url="http://x/prices", ttl=60)
    hit = cache.get("fd/prices", {"ticker": "AAPL"})
    assert hit is not None and hit.value == [1, 2] and hit.url == "http://x/prices"
    clock.now += 59.9
    assert cache.get("fd/prices", {"ticker": "AAPL"}) is not None
    clock.now += 0.1
    assert cache.get("fd/prices", {"ticker": "AAPL"}) is None


def test_entries_without_ttl_never_expire(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, clock=clock)
    cache.set("edgar/filing", {"accession": "1"}, {"a": 1}, url="u", ttl=None)
    clock.now += 10 * 365 * 86400
    assert cache.get("edgar/filing", {"accession": "1"}) is not None


def test_keys_ignore_parameter_order_and_none(tmp_path: Path) -> None:
    assert canonical_key("n", {"a": 1, "b": ["y", "x"], "c": None}) == \
        canonical_key("n", {"b": ["x", "y"], "a": 1})
    cache = DiskCache(tmp_path)
    cache.set("n", {"ticker": "aapl", "period": "annual", "limit": 4}, "v", url="u", ttl=None)
    assert cache.get("n", {"limit": 4, "period": "annual", "ticker": "aapl"}) is not None
    assert cache.get("n", {"limit": 5, "period": "annual", "ticker": "aapl"}) is None
    assert cache.path_for("n", {"ticker": "aapl"}).name.startswith("AAPL_")


def test_corrupt_or_malformed_files_are_deleted_and_missed(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    for params, text in (({"k": 1}, "{not json"), ({"k": 2}, json.dumps({"no": "value"})),
                         ({"k": 3}, json.dumps({"value": 1, "expires_at": "soon"}))):
        path = cache.path_for("ns", params)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        assert cache.get("ns", params) is None
        assert not path.exists()


def test_concurrent_writers_leave_a_valid_entry_and_no_temp_files(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)

    def write(n: int) -> None:
        for _ in range(20):
            cache.set("ns", {"k": "same"}, {"writer": n, "blob": "x" * 5000}, url="u", ttl=None)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hit = cache.get("ns", {"k": "same"})
    assert hit is not None and hit.value["writer"] in range(6)
    assert [p.name for p in cache.path_for("ns", {"k": "same"}).parent.iterdir()] == [
        cache.path_for("ns", {"k": "same"}).name]


def test_unwritable_cache_is_silent(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("I am a file, not a folder")
    cache = DiskCache(blocker)
    cache.set("ns", {"k": 1}, "v", url="u", ttl=None)
    assert cache.get("ns", {"k": 1}) is None


def test_closed_window_is_strictly_before_today() -> None:
    today = dt.date(2024, 6, 1)
    assert is_closed_window("2024-05-31", today)
    assert not is_closed_window("2024-06-01", today)
    assert not is_closed_window(None, today)
    assert not is_closed_window("garbage", today)
