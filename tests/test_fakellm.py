"""The fake LLM server, driven by the real openai / anthropic SDKs over loopback."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from dexter.testing.fakellm import (
    Delay,
    DropStream,
    Dynamic,
    FakeLLM,
    HttpError,
    Malformed,
    MidStreamError,
    RecordedRequest,
    Reply,
    Stall,
    ToolCallSpec,
    Truncate,
    Usage,
    check_anthropic_messages,
    check_openai_messages,
    load_script,
)

USER: Any = [{"role": "user", "content": "hi"}]


def oai(fake: FakeLLM, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-test", max_retries=retries)


def ant(fake: FakeLLM, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fake.anthropic_base_url, api_key="sk-ant-test", max_retries=retries
    )


def oai_stream(client: openai.OpenAI) -> list[Any]:
    stream = client.chat.completions.create(
        model="gpt-fake", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    return list(stream)


def accumulate(chunks: list[Any]) -> tuple[str, dict[int, dict[str, str]], str | None, Any]:
    """Reassemble text, tool calls by index, the finish reason and usage from raw chunks."""
    text, calls, finish, usage = "", {}, None, None
    for ch in chunks:
        if ch.usage is not None:
            usage = ch.usage
        for choice in ch.choices:
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += tc.id or ""
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    return text, calls, finish, usage


# ---- OpenAI -------------------------------------------------------------------------------


def test_openai_stream_text_and_split_tool_call(fake_llm: FakeLLM) -> None:
    args = {"query": "tiktoken offline", "limit": 5}
    fake_llm.enqueue(
        Reply(text="Hello there", tool_calls=[ToolCallSpec("web_search", args)], usage=Usage(12, 7))
    )
    chunks = oai_stream(openai.OpenAI(max_retries=0))  # configured by the fixture's env vars
    text, calls, finish, usage = accumulate(chunks)
    assert text == "Hello there"
    assert calls[0]["name"] == "web_search" and calls[0]["id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == args
    arg_chunks = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(arg_chunks) > 3  # really split
    assert all(c.choices[0].delta.tool_calls[0].id is None for c in arg_chunks[1:])
    assert finish == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 7, 19)
    req = fake_llm.last_request
    assert (
        req.route == "openai"
        and req.stream
        and req.headers["authorization"] == "Bearer sk-test-openai"
    )
    fake_llm.assert_no_violations()


def test_openai_parallel_tool_calls_interleaved(fake_llm: FakeLLM) -> None:
    a, b = {"ticker": "AAPL", "period": "annual"}, {"ticker": "MSFT", "period": "quarterly"}
    fake_llm.enqueue(
        Reply(
            tool_calls=[ToolCallSpec("financials", a, id="c_a"), ToolCallSpec("prices", b)],
            chunk_size=5,
            interleave_tool_calls=True,
        )
    )
    chunks = oai_stream(oai(fake_llm))
    indices = [
        c.choices[0].delta.tool_calls[0].index
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert indices[:4] == [0, 1, 0, 1]  # fragments interleave
    _, calls, finish, _ = accumulate(chunks)
    assert calls[0]["id"] == "c_a" and calls[0]["name"] == "financials"
    assert calls[1]["name"] == "prices" and calls[1]["id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == a and json.loads(calls[1]["arguments"]) == b
    assert finish == "tool_calls"
    # The SDK's own stream helper accumulates them too.
    fake_llm.enqueue(
        Reply(tool_calls=[ToolCallSpec("f", a), ToolCallSpec("g", b)], interleave_tool_calls=True)
    )
    with oai(fake_llm).chat.completions.stream(
        model="gpt-fake", messages=USER, stream_options={"include_usage": True}
    ) as s:
        final = s.get_final_completion()
    tcs = final.choices[0].message.tool_calls or []
    assert [json.loads(t.function.arguments) for t in tcs] == [a, b]


def test_openai_non_stream_tool_call(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Reply(text="Checking.", tool_calls=[ToolCallSpec("prices", '{"t": "X"')]))
    resp = oai(fake_llm).chat.completions.create(model="gpt-x", messages=USER)
    msg = resp.choices[0].message
    assert msg.content == "Checking." and resp.model == "gpt-x"
    assert resp.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls and msg.tool_calls[0].function.arguments == '{"t": "X"'
    assert resp.usage is not None and resp.usage.prompt_tokens > 0  # estimated
    assert fake_llm.remaining() == 0 and not fake_llm.last_request.stream


async def test_openai_async_stream(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Reply(text="async works"))
    client = openai.AsyncOpenAI(max_retries=0)
    stream = await client.chat.completions.create(
        model="gpt-fake", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "async works"
    await client.close()


# ---- Anthropic ----------------------------------------------------------------------------


def test_anthropic_stream_thinking_text_tool_use(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(
        Reply(
            thinking="Let me look this up.",
            thinking_signature="c2lnbmF0dXJl",
            text="Searching now.",
            tool_calls=[ToolCallSpec("web_search", {"query": "tiktoken"})],
            usage=Usage(25, 42),
        )
    )
    client = anthropic.Anthropic(max_retries=0)
    kinds: list[str] = []
    with client.messages.stream(model="claude-fake", max_tokens=1024, messages=USER) as stream:
        for event in stream:
            kinds.append(event.type)
        final = stream.get_final_message()
    assert {"thinking", "signature", "text", "input_json", "message_stop"} <= set(kinds)
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    thinking, text, tool = final.content
    assert thinking.thinking == "Let me look this up." and thinking.signature == "c2lnbmF0dXJl"
    assert text.text == "Searching now."
    assert tool.input == {"query": "tiktoken"} and tool.name == "web_search"
    assert tool.id.startswith("toolu_")
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (25, 42)
    # anthropic 2.x sends the API key as a Bearer token, not x-api-key.
    headers = fake_llm.last_request.headers
    assert "sk-ant-test" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])
    fake_llm.assert_no_violations()


def test_anthropic_non_stream(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Reply(text="Done.", usage=Usage(3, 2)))
    msg = ant(fake_llm).messages.create(model="claude-fake", max_tokens=64, messages=USER)
    assert msg.content[0].text == "Done."
    assert msg.stop_reason == "end_turn" and msg.usage.output_tokens == 2


# ---- HTTP errors and retries --------------------------------------------------------------


def test_rate_limit_retried_then_succeeds(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(HttpError.openai_rate_limit(), Reply(text="ok"))
    resp = oai(fake_llm, retries=2).chat.completions.create(model="gpt-fake", messages=USER)
    assert resp.choices[0].message.content == "ok"
    reqs = fake_llm.requests_for("openai")
    assert len(reqs) == 2 and reqs[1].headers["x-stainless-retry-count"] == "1"


def test_rate_limit_without_retries_raises(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(HttpError.openai_rate_limit())
    with pytest.raises(openai.RateLimitError) as exc:
        oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert exc.value.code == "rate_limit_exceeded"
    assert exc.value.response.headers["retry-after"] == "0.01"
    fake_llm.enqueue(HttpError.openai_insufficient_quota())  # x-should-retry: false
    with pytest.raises(openai.RateLimitError) as exc:
        oai(fake_llm, retries=2).chat.completions.create(model="gpt-fake", messages=USER)
    assert exc.value.code == "insufficient_quota" and len(fake_llm.requests) == 2
    fake_llm.enqueue(HttpError.anthropic_rate_limit(), Reply(text="later"))
    msg = ant(fake_llm, retries=1).messages.create(model="c", max_tokens=8, messages=USER)
    assert msg.content[0].text == "later"


def test_context_overflow_both_providers(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(HttpError.openai_context_overflow(), HttpError.anthropic_prompt_too_long())
    with pytest.raises(openai.BadRequestError) as oexc:
        oai(fake_llm, retries=2).chat.completions.create(model="gpt-fake", messages=USER)
    assert oexc.value.code == "context_length_exceeded" and oexc.value.param == "messages"
    assert "maximum context length is 128000" in oexc.value.message
    with pytest.raises(anthropic.BadRequestError) as aexc:
        ant(fake_llm, retries=2).messages.create(model="c", max_tokens=8, messages=USER)
    body: Any = aexc.value.body
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "prompt is too long: 205351 tokens > 200000 maximum",
    }
    assert aexc.value.request_id == "req_fake2"
    assert len(fake_llm.requests) == 2  # 400s are not retried


def test_overloaded_retried_and_auth_errors(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(HttpError.anthropic_overloaded(), Reply(text="back"))
    msg = ant(fake_llm, retries=2).messages.create(model="c", max_tokens=8, messages=USER)
    assert msg.content[0].text == "back" and len(fake_llm.requests) == 2
    fake_llm.enqueue(HttpError.anthropic_auth(), HttpError.openai_auth())
    with pytest.raises(anthropic.AuthenticationError):
        ant(fake_llm, retries=2).messages.create(model="c", max_tokens=8, messages=USER)
    with pytest.raises(openai.AuthenticationError) as exc:
        oai(fake_llm, retries=2).chat.completions.create(model="gpt-fake", messages=USER)
    assert exc.value.code == "invalid_api_key"


def test_route_shaped_server_error(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(HttpError.server_error(503), HttpError.server_error(500))
    with pytest.raises(openai.InternalServerError) as oexc:
        oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert oexc.value.type == "server_error"
    with pytest.raises(anthropic.InternalServerError) as aexc:
        ant(fake_llm).messages.create(model="c", max_tokens=8, messages=USER)
    assert aexc.value.body["error"]["type"] == "api_error"


# ---- Stream faults ------------------------------------------------------------------------


def test_drop_stream_raises_connection_error(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(DropStream(after_chunks=3), DropStream(after_chunks=3))
    with pytest.raises(openai.APIConnectionError):
        oai_stream(oai(fake_llm))
    with (
        pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)),
        ant(fake_llm).messages.stream(model="c", max_tokens=8, messages=USER) as s,
    ):
        s.get_final_message()


def test_truncate_yields_no_finish_reason(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Truncate(after_chunks=100), Truncate(after_chunks=4))
    text, _, finish, usage = accumulate(oai_stream(oai(fake_llm)))
    assert finish is None and usage is None and text.startswith("This reply")
    with ant(fake_llm).messages.stream(model="c", max_tokens=8, messages=USER) as s:
        final = s.get_final_message()
    assert final.stop_reason is None


def test_mid_stream_error_raises(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(MidStreamError(after_chunks=2, error_type="server_error"), MidStreamError())
    with pytest.raises(openai.APIError):
        oai_stream(oai(fake_llm))
    with (
        pytest.raises(anthropic.APIStatusError) as exc,
        ant(fake_llm).messages.stream(model="c", max_tokens=8, messages=USER) as s,
    ):
        s.get_final_message()
    assert exc.value.status_code == 200
    assert exc.value.body["error"]["type"] == "overloaded_error"


def test_malformed_line_raises_json_error(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Malformed(after_chunks=1))
    with pytest.raises(json.JSONDecodeError):
        oai_stream(oai(fake_llm))


def test_stall_waits_for_gate_and_delay(fake_llm: FakeLLM) -> None:
    stall = Stall(threading.Event(), after_chunks=2, reply=Reply(text="abcdefghijklmnop"))
    fake_llm.enqueue(stall, Delay(0.05, Reply(text="late")))
    got: list[str] = []

    def consume() -> None:
        got.extend(accumulate(oai_stream(oai(fake_llm)))[0])

    worker = threading.Thread(target=consume)
    worker.start()
    assert stall.reached.wait(5)
    time.sleep(0.05)
    assert worker.is_alive()  # the stream is paused mid-body
    stall.gate.set()
    worker.join(5)
    assert "".join(got) == "abcdefghijklmnop"
    t0 = time.monotonic()
    resp = oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert resp.choices[0].message.content == "late" and time.monotonic() - t0 >= 0.05


# ---- Invariants, queue, embeddings --------------------------------------------------------


def test_openai_invariants(fake_llm: FakeLLM) -> None:
    good = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
    ]  # fmt: skip
    fake_llm.enqueue(Reply(text="a"), Reply(text="b"), Reply(text="c"))
    client = oai(fake_llm)
    client.chat.completions.create(model="gpt-fake", messages=good)
    fake_llm.assert_no_violations()
    orphan = [*USER, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
    client.chat.completions.create(model="gpt-fake", messages=orphan)
    assert len(fake_llm.violations) == 1 and "'nope'" in fake_llm.violations[0]
    client.chat.completions.create(model="gpt-fake", messages=USER, stream=True).close()
    assert "include_usage" in fake_llm.violations[-1]
    with pytest.raises(AssertionError, match="nope"):
        fake_llm.assert_no_violations()
    unanswered = [*good[:2], {"role": "user", "content": "next"}]
    assert check_openai_messages(unanswered) and check_openai_messages(good) == []


def test_anthropic_invariants(fake_llm: FakeLLM) -> None:
    use = {"role": "assistant", "content": [
        {"type": "text", "text": "hm"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}  # fmt: skip
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
    }
    assert check_anthropic_messages([*USER, use, result]) == []
    assert check_anthropic_messages([*USER, use, {"role": "user", "content": "skip"}])
    assert check_anthropic_messages([*USER, use])
    fake_llm.enqueue(Reply(text="x"))
    bad = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "r"}],
    }
    ant(fake_llm).messages.create(model="c", max_tokens=8, messages=[*USER, use, bad])
    assert any("'zz'" in v for v in fake_llm.violations)
    assert any("['t1'] not answered" in v for v in fake_llm.violations)


def test_exhausted_queue_is_a_loud_500(fake_llm: FakeLLM) -> None:
    with pytest.raises(openai.InternalServerError, match="no responses queued"):
        oai(fake_llm, retries=2).chat.completions.create(model="gpt-fake", messages=USER)
    assert len(fake_llm.requests) == 1  # x-should-retry: false stops the SDK retrying
    assert "no responses queued" in fake_llm.violations[0]
    fake_llm.set_default(Reply(text="default"))
    for _ in range(2):
        resp = oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
        assert resp.choices[0].message.content == "default"


def test_per_route_queues(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(Reply(text="shared"))
    fake_llm.enqueue(Reply(text="for anthropic"), route="anthropic")
    msg = ant(fake_llm).messages.create(model="c", max_tokens=8, messages=USER)
    assert msg.content[0].text == "for anthropic"
    resp = oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert resp.choices[0].message.content == "shared"
    fake_llm.assert_all_consumed()


def test_dynamic_step_answers_from_the_request(fake_llm: FakeLLM) -> None:
    def echo_model(request: RecordedRequest) -> Reply:
        return Reply(text=f"you asked {request.body['model']} on {request.route}")

    fake_llm.enqueue(Dynamic(echo_model), Dynamic(echo_model))
    resp = oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert resp.choices[0].message.content == "you asked gpt-fake on openai"
    msg = ant(fake_llm).messages.create(model="claude-x", max_tokens=8, messages=USER)
    assert msg.content[0].text == "you asked claude-x on anthropic"
    fake_llm.set_default(Dynamic(lambda request: HttpError.openai_context_overflow()))
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    fake_llm.assert_no_violations()


def test_dynamic_step_that_raises_is_a_violation(fake_llm: FakeLLM) -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise RuntimeError("responder bug")

    fake_llm.enqueue(Dynamic(broken))
    with pytest.raises(openai.InternalServerError):
        oai(fake_llm).chat.completions.create(model="gpt-fake", messages=USER)
    assert "responder bug" in "\n".join(fake_llm.violations)


def test_embeddings_deterministic(fake_llm: FakeLLM) -> None:
    client = oai(fake_llm)
    first = client.embeddings.create(model="text-embedding-fake", input=["apple", "banana"])
    again = client.embeddings.create(
        model="text-embedding-fake", input="apple", encoding_format="float"
    )
    vecs = [d.embedding for d in first.data]
    assert len(vecs[0]) == len(vecs[1]) == 16 and vecs[0] != vecs[1]
    assert again.data[0].embedding == pytest.approx(vecs[0], abs=1e-6)  # base64 == float path
    assert math.isclose(sum(v * v for v in vecs[0]), 1.0, rel_tol=1e-5)
    fake_llm.enqueue(HttpError.openai_rate_limit(), route="embeddings")
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model="text-embedding-fake", input="x")
    models = client.models.list()
    assert "gpt-fake" in [m.id for m in models.data]


def test_load_script_json_forms(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([
        {"type": "reply", "text": "hi", "tool_calls": [{"name": "f", "arguments": {"a": 1}}],
         "usage": {"input_tokens": 3, "output_tokens": 4}},
        {"type": "http_error", "preset": "openai_rate_limit", "retry_after": "0.5"},
        {"type": "http_error", "status": 418, "body": {"error": {"message": "teapot"}}},
        {"type": "drop_stream", "after_chunks": 2, "reply": {"text": "partial"}},
        {"type": "stall", "after_chunks": 1, "timeout": 0.1},
        {"type": "delay", "seconds": 0.1, "step": {"type": "truncate"}},
    ]))  # fmt: skip
    steps = load_script(script)
    assert isinstance(steps[0], Reply) and steps[0].usage == Usage(3, 4)
    assert steps[0].tool_calls[0].arguments == {"a": 1}
    assert isinstance(steps[1], HttpError) and steps[1].headers["retry-after"] == "0.5"
    assert isinstance(steps[2], HttpError) and steps[2].status == 418
    assert isinstance(steps[3], DropStream) and steps[3].reply.text == "partial"
    assert isinstance(steps[4], Stall) and steps[4].timeout == 0.1
    assert isinstance(steps[5], Delay) and isinstance(steps[5].step, Truncate)
    with pytest.raises(ValueError, match="unknown step type"):
        load_script([{"type": "bogus"}])


def test_harness_mode_subprocess(tmp_path: Path) -> None:
    script, port_file = tmp_path / "scenario.json", tmp_path / "port"
    script.write_text(json.dumps([{"type": "reply", "text": "from the harness"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dexter.testing.fakellm", "--script", str(script),
         "--port", "0", "--port-file", str(port_file), "--log", str(tmp_path / "log.jsonl")],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "fakellm did not start"
            time.sleep(0.02)
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port_file.read_text()}/v1", api_key="k", max_retries=0
        )
        resp = client.chat.completions.create(model="gpt-fake", messages=USER)
        assert resp.choices[0].message.content == "from the harness"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "listening on" in err
    logged = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])
    assert logged["route"] == "openai" and logged["violations"] == []
