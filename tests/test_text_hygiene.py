"""Invalid text from outside (a lone surrogate: half of a split emoji) never crashes a writer."""

from __future__ import annotations

import io
import json
from pathlib import Path

from dexter.events import AnswerDelta, ToolEnd
from dexter.render import choose_renderer
from dexter.scratchpad import Scratchpad
from dexter.text import clean, clean_value

HALF = "\ud83d"


def test_clean_replaces_lone_halves_and_joins_pairs() -> None:
    assert clean(f"a{HALF}b") == "a\ufffdb"
    assert clean("\ud83d\ude00") == "😀"
    assert clean("plain") == "plain"
    assert clean_value({"k": [f"x{HALF}", ("y\udc00",)]}) == {"k": ["x\ufffd", ("y\ufffd",)]}


def test_the_scratchpad_writes_a_lone_surrogate_as_a_replacement(tmp_path: Path) -> None:
    pad = Scratchpad(tmp_path, f"question {HALF}", model="m", provider="p")
    pad.add_tool_result("bash", {"command": f"echo {HALF}"}, f"out {HALF}", duration_ms=1,
                        is_error=False, tool_call_id="c1")
    lines = [json.loads(line) for line in pad.path.read_text(encoding="utf-8").splitlines()]
    assert pad.write_error is None
    assert lines[0]["query"] == "question \ufffd"
    assert lines[-1]["result"] == "out \ufffd" and lines[-1]["args"]["command"] == "echo \ufffd"


def test_json_and_plain_views_write_it_too() -> None:
    for json_out in (True, False):
        stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, like a real stdout
        view = choose_renderer(stream, json=json_out, is_terminal=False)
        view.handle(ToolEnd(tool="bash", args={"command": HALF}, result=f"r{HALF}", duration_ms=1,
                            tool_call_id="c1"))
        view.handle(AnswerDelta(text=f"up 5% {HALF}"))
        view.close()
        stream.flush()
        written = stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
        assert "\ufffd" in written or not json_out
