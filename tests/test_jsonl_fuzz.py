"""Every JSONL reader survives any line: a seeded fuzz of real scratchpad lines.

A real ``dexter ask`` run (fake LLM, real CLI) writes a scratchpad; its lines are mutated
(truncated, nested thousands deep, wrong types in every field, huge numbers, binary bytes,
lone surrogates, duplicate keys, huge lines, control characters) into 600 variant files
that go through the function ``dexter replay`` runs, in all three views, and a few through
the real CLI. Nothing may raise; a bad line is skipped and counted; the lines left intact
still render, and no control character from a line reaches the terminal. The sessions-log
reader and ``event_from_dict`` get the same lines.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dexter.cli import replay_cmd
from dexter.events import EVENT_TYPES, Done, event_from_dict
from dexter.memory.sessions import read_turns
from dexter.render.replay import ReplayStats, replay_events
from dexter.scratchpad import Scratchpad
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec, Usage
from dexter.text import parse_json_line
from tests.cli_helpers import cli_env, run_cli

SEED = 20260117
VARIANTS = 600
QUERY = "Revenue went from 60.9 to 130.5. How much did it grow?"
ANSWER_WORDS = "year over year"

Line = bytes
Mutation = Callable[[random.Random, list[Line]], list[Line]]


@pytest.fixture(scope="module")
def real_lines(tmp_path_factory: pytest.TempPathFactory) -> list[Line]:
    """The lines of a scratchpad written by a real run: thinking, two tool results (one an
    error), verification and done."""
    cwd = tmp_path_factory.mktemp("real-run")
    with FakeLLM() as fake:
        fake.enqueue(
            Reply(text="Let me compute the growth.",
                  tool_calls=[ToolCallSpec("calculator", {"expression": "(130.5 - 60.9) / 60.9 * 100"}),
                              ToolCallSpec("read_file", {"path": "missing.txt"})],
                  usage=Usage(900, 40)),
            Reply(text=f"Revenue grew **114.29%** {ANSWER_WORDS}.", usage=Usage(1000, 20)),
        )
        result = run_cli(["ask", "--yes", "--model", "gpt-5.6-sol", QUERY], cwd=cwd,
                         env=cli_env(fake, cwd))
    assert result.code == 0, result.stderr
    [pad] = result.scratchpads()
    lines = pad.read_bytes().splitlines()
    kinds = [json.loads(line)["type"] for line in lines]
    assert kinds[0] == "init" and kinds[-1] == "done" and kinds.count("tool_result") == 2
    return lines


# -- mutations of one line ---------------------------------------------------------------

ODD_VALUES: list[str] = [
    "null", "true", "false", "0", "-1", "1e999", "-1e999", "NaN", "Infinity", "-Infinity",
    "9" * 400, "-" + "9" * 400, "9" * 5000, "1.5e308", "1e-400", '""', '"x"', "[]", "{}",
    '[1, "a", null]', '{"a": {"b": []}}', '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000\\u001b[2J"',
    '"' + "é" * 5000 + '"', "[" * 50 + "]" * 50, '{"input_tokens": "many"}',
    '[{"tool": 5, "args": []}]', '{"unsupported": [{"end": 1e999}], "checked": -1}',
]


def _fields(line: Line) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _with_field(line: Line, key: str, raw: str) -> Line:
    """The line with ``key`` set to the raw JSON text ``raw`` (other keys as they were)."""
    fields = _fields(line) or {}
    parts = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items() if k != key]
    parts.append(f"{json.dumps(key)}: {raw}")
    return ("{" + ", ".join(parts) + "}").encode("utf-8", "surrogatepass")


def truncate(rng: random.Random, line: Line) -> Line:
    return line[: rng.randrange(0, max(len(line), 1))]


def wrong_type(rng: random.Random, line: Line) -> Line:
    fields = _fields(line) or {"type": "done"}
    key = rng.choice(sorted(fields))
    return _with_field(line, key, rng.choice(ODD_VALUES))


def every_field_odd(rng: random.Random, line: Line) -> Line:
    fields = _fields(line) or {}
    for key in fields:
        if key not in ("type", "timestamp") or rng.random() < 0.1:
            line = _with_field(line, key, rng.choice(ODD_VALUES))
    return line


def nest(rng: random.Random, line: Line) -> Line:
    depth = rng.choice([60, 199, 200, 201, 900, 1_500, 100_000])
    fields = _fields(line) or {"type": "done"}
    key = rng.choice(sorted(fields))
    return _with_field(line, key, "[" * depth + "1" + "]" * depth)


def nest_objects(rng: random.Random, line: Line) -> Line:
    depth = rng.choice([150, 250, 5_000])
    return _with_field(line, "args", '{"a": ' * depth + "1" + "}" * depth)


def huge_number(rng: random.Random, line: Line) -> Line:
    fields = _fields(line) or {}
    numeric = [k for k, v in fields.items() if isinstance(v, int | float)] or ["duration_ms"]
    return _with_field(line, rng.choice(numeric), rng.choice(["1e999", "9" * 400, "-1e999",
                                                               "9" * 5000, "NaN"]))


def binary(rng: random.Random, line: Line) -> Line:
    noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    at = rng.randrange(0, len(line) + 1)
    return rng.choice([noise, line[:at] + noise + line[at:], b"\x00" * 10 + line])


def surrogates(rng: random.Random, line: Line) -> Line:
    fields = _fields(line) or {}
    key = rng.choice([k for k, v in fields.items() if isinstance(v, str)] or ["result"])
    text = json.dumps(str(fields.get(key, "")))[1:-1]
    half = rng.choice(["\\ud83d", "\\ude00", "\\udfff\\ud800", "\\ud800\\u0000"])
    return _with_field(line, key, f'"{text[:5]}{half}{text[5:]}"')


def duplicate_keys(rng: random.Random, line: Line) -> Line:
    extra = rng.choice(['"type": "done"', '"type": 7', '"timestamp": null',
                        '"type": "tool_result", "type": "init"', '"answer": {"x": 1}'])
    text = line.rstrip()
    return text[:-1] + b", " + extra.encode() + b"}" if text.endswith(b"}") else text


def huge_line(rng: random.Random, line: Line) -> Line:
    size = rng.choice([100_000, 1_000_000])
    return _with_field(line, rng.choice(["result", "answer", "message", "query"]),
                       json.dumps("x" * size))


def control_characters(rng: random.Random, line: Line) -> Line:
    fields = _fields(line) or {}
    key = rng.choice([k for k, v in fields.items() if isinstance(v, str)] or ["result"])
    return _with_field(line, key, json.dumps("\x1b[2J\x07bad\x00\x9b31m\r" + str(fields.get(key))))


def other_type(rng: random.Random, line: Line) -> Line:
    return _with_field(line, "type", json.dumps(rng.choice([*sorted(EVENT_TYPES), "init", "tool_result"])))


def not_an_object(rng: random.Random, line: Line) -> Line:
    return rng.choice([b"[]", b"42", b'"text"', b"null", b"{", b"}", b"", b"   ", b"\xef\xbb\xbf{}"])


LINE_MUTATIONS: list[Callable[[random.Random, Line], Line]] = [
    truncate, wrong_type, every_field_odd, nest, nest_objects, huge_number, binary, surrogates,
    duplicate_keys, huge_line, control_characters, other_type, not_an_object,
]


def variants(lines: list[Line]) -> Iterator[tuple[int, list[Line], set[int], str]]:
    """(number, lines, indexes of the lines changed, what was done), seeded."""
    rng = random.Random(SEED)
    for number in range(VARIANTS):
        out = list(lines)
        changed: set[int] = set()
        names = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            index = rng.randrange(len(out))
            if number % 97 == 0 and lines[index] == b"":
                continue
            mutation = rng.choice(LINE_MUTATIONS)
            if mutation is huge_line and rng.random() < 0.7:
                mutation = wrong_type  # keep the run short: few megabyte lines
            out[index] = mutation(rng, out[index])
            changed.add(index)
            names.append(f"{mutation.__name__}@{index}")
        if number % 50 == 7:  # the whole file shuffled, or a line repeated
            rng.shuffle(out)
            changed = set(range(len(out)))
            names.append("shuffle")
        yield number, out, changed, " ".join(names)


# -- the checks --------------------------------------------------------------------------

def replay_in_process(path: Path, view: str, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``dexter replay`` as the CLI runs it; ``view`` is plain, json or live (a terminal)."""
    terminal = io.StringIO()
    if view == "live":
        console = Console(file=terminal, force_terminal=True, width=100, color_system="truecolor")
        monkeypatch.setattr(replay_cmd, "stdout_console", lambda plain=False: console)
    else:
        monkeypatch.setattr(replay_cmd, "stdout_console",
                            lambda plain=False: Console(file=terminal, force_terminal=False,
                                                        color_system=None, width=100))
    code = replay_cmd.run_replay(path, json_out=view == "json")
    captured = capsys.readouterr()
    return code, terminal.getvalue() + captured.out, captured.err


def test_seeded_variants_of_a_real_scratchpad_replay_in_every_view(
        real_lines: list[Line], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    init, done = real_lines[0], real_lines[-1]
    counted = 0
    for number, lines, changed, what in variants(real_lines):
        path = tmp_path / f"v{number}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        view = ("plain", "json", "live")[number % 3]
        code, out, err = replay_in_process(path, view, capsys, monkeypatch)
        where = f"variant {number} ({what}, {view})"
        assert code in (0, 2), where  # 2: nothing in it is a scratchpad entry
        assert "Traceback" not in err, where
        log = Scratchpad.read(path)
        if code == 2:
            assert not log.entries and "holds no readable entries" in err, where
            continue
        if view == "json":
            for row in out.splitlines():
                assert isinstance(json.loads(row), dict), where
        for raw in ("\x1b[2J", "\x07", "\x00", "\x9b"):  # shown, never sent as is
            assert raw not in out and raw not in err, (where, raw)
        if log.skipped:
            counted += 1
            assert f"Skipped {log.skipped} line" in err, where
        if 0 not in changed and lines[0] == init:
            assert QUERY.split()[0] in out, where  # the intact init line still renders
        if len(lines) - 1 not in changed and lines[-1] == done and view != "live":
            assert ANSWER_WORDS in out, where  # ...and the intact done line
    assert counted > 50  # many variants had a line skipped, and each said so


def test_every_mutated_line_is_safe_for_each_reader(real_lines: list[Line]) -> None:
    """Each reader on its own: the scratchpad line parser, replay, ``event_from_dict`` and
    the sessions log (whose lines share the shape)."""
    rng = random.Random(SEED + 1)
    for _ in range(VARIANTS):
        line = rng.choice(LINE_MUTATIONS)(rng, rng.choice(real_lines))
        value = parse_json_line(line)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable again, no surrogate
        if isinstance(value, dict):
            event_from_dict(value)
            stats = ReplayStats()
            for event in replay_events([value], stats=stats):
                json.dumps(event.to_dict(), ensure_ascii=False, default=str).encode("utf-8")
        text = line.decode("utf-8", errors="replace")
        for turn in read_turns(text + "\n" + text.replace('"result"', '"answer"'), 0.0):
            turn.text.encode("utf-8")


def test_what_the_fuzz_found_stays_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The crashes of issue 17: deep nesting, 1e999 and 400-digit durations, surrogates."""
    ts = '"timestamp": "2025-01-02T10:15:00+00:00"'
    lines = [
        '{"type": "init", ' + ts + ', "query": "q\\ud800", "model": "m", "provider": "p"}',
        '{"type": "tool_result", ' + ts + ', "tool": "calculator", "args": {}, '
        '"result": "4\\udc00", "duration_ms": 1e999, "is_error": false, "tool_call_id": "c1"}',
        '{"type": "tool_result", ' + ts + ', "tool": "calculator", "args": {}, '
        '"result": "5", "duration_ms": ' + "9" * 400 + ', "is_error": false, "tool_call_id": "c2"}',
        '{"type": "thinking", ' + ts + ', "message": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"type": "done", ' + ts + ', "answer": "ok\\ud83d", "total_time_ms": 1e999, '
        '"token_usage": {"input_tokens": ' + "9" * 400 + '}, "tokens_per_second": NaN}',
    ]
    path = tmp_path / "crash.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for view in ("plain", "json", "live"):
        code, out, err = replay_in_process(path, view, capsys, monkeypatch)
        assert code == 0 and "Traceback" not in err
        assert "Skipped 1 line corrupt" in err  # the 100,000-deep line
        assert "ok" in out
    events = list(replay_events(Scratchpad.read(path).entries))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.to_dict()["answer"] == "ok\ufffd"
    assert (done.total_time_ms, done.token_usage, done.tokens_per_second) == (0, {}, 0.0)
    assert [getattr(e, "duration_ms", None) for e in events[1:5]] == [None, 0, None, 0]


def test_a_few_variants_through_the_real_cli(real_lines: list[Line], tmp_path: Path) -> None:
    env = cli_env(None, tmp_path)
    picked = [v for v in variants(real_lines) if v[0] % 120 == 1]
    assert len(picked) == 5
    for number, lines, _changed, what in picked:
        path = tmp_path / f"cli{number}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        for args in (["replay", str(path)], ["replay", "--json", str(path)]):
            result = run_cli(args, cwd=tmp_path, env=env)
            assert result.code in (0, 1), (what, result.stderr)
            assert "Traceback" not in result.stderr, (what, result.stderr)


@pytest.mark.parametrize("deep", ["[" * 100_000, "[" * 950 + "]" * 950, '{"a": ' * 5_000 + "1"])
def test_text_nested_thousands_deep_is_text_everywhere_it_is_parsed(tmp_path: Path,
                                                                   deep: str) -> None:
    """A tool's output, a model's tool arguments or an error body that is JSON nested
    thousands deep is kept as text, not a RecursionError that ends the run."""
    from dexter.providers.common import parse_tool_arguments
    from dexter.providers.errors import classify_error
    from dexter.render.format import result_summary

    class BadRequest(Exception):
        status_code = 400
        body = deep

    pad = Scratchpad(tmp_path, "q")
    pad.add_tool_result("web_fetch", {}, deep, duration_ms=1, is_error=False, tool_call_id="c1")
    assert pad.write_error is None and pad.tool_results[0].result == deep
    [entry] = Scratchpad.read(pad.path).of_type("tool_result")
    assert entry["result"] is not None
    assert result_summary("web_fetch", deep)
    assert parse_tool_arguments(deep) == ({}, deep)
    assert classify_error(BadRequest("HTTP 400")).kind == "bad_request"
