"""``--json`` output: one JSON object per line with ``type``; the last one is ``done``."""

from __future__ import annotations

import io
import json

from dexter.events import Done, StreamProgress, ToolEnd, event_from_dict
from dexter.render.demo import sample_events
from dexter.render.jsonl import JsonRenderer


def run_json() -> list[str]:
    stream = io.StringIO()
    renderer = JsonRenderer(stream)
    for event in sample_events():
        renderer.handle(event)
    renderer.close()
    return stream.getvalue().splitlines()


def test_every_line_is_one_json_object_with_a_type_and_done_is_last() -> None:
    lines = run_json()
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) and isinstance(o.get("type"), str) for o in objects)
    assert objects[-1]["type"] == "done"
    assert objects[-1]["answer"].startswith("## Revenue growth")


def test_stream_progress_is_left_out_and_everything_else_kept() -> None:
    types = [json.loads(line)["type"] for line in run_json()]
    expected = [e.type for e in sample_events() if not isinstance(e, StreamProgress)]
    assert types == expected
    assert "answer_delta" in types


def test_lines_round_trip_to_the_same_events() -> None:
    events = [event_from_dict(json.loads(line)) for line in run_json()]
    assert events == [e for e in sample_events() if not isinstance(e, StreamProgress)]


def test_each_event_is_flushed_as_it_is_written() -> None:
    class CountingStream(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1
            super().flush()

    stream = CountingStream()
    renderer = JsonRenderer(stream)
    renderer.handle(ToolEnd("read_file", {"path": "ünïcode.md"}, "text", 5, "c1"))
    assert stream.flushes == 1
    assert "ünïcode" in stream.getvalue()  # not \\u-escaped
    renderer.handle(Done("ok"))
    assert stream.flushes == 2
