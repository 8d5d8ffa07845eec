"""Time of one request through the real OpenAI SDK at 100 to 5,000 messages, streamed and
blocking.

``OpenAIChatModel`` (the real ``openai`` SDK) gets a short reply from the fake server
over loopback for transcripts of growing length (tool rounds of about 300 characters of
result each), streamed (``generate``) and blocking (``complete``, as compaction and the
memory flush call it). Printed per size: the median milliseconds of one request, open to
the last chunk, with the fake answering at once, so what is left is dexter's and the
SDK's own work on the request path (building, serialising and sending the body, reading
the reply). Each request is a new transcript (no conversion reused from the one before).
Issue 18 measured 388 ms at 1,091 messages and 1.33 s at 5,090 with the SDK's
per-request parameter transform, against 18 and 68 ms with the body sent as built.
Prints figures only; always exits 0.

Run: ``.venv/bin/python benchmarks/request_path.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from dexter.providers.base import ModelRequest, ToolSpec
from dexter.providers.call import generate
from dexter.providers.openai_chat import OpenAIChatModel
from dexter.testing.fakellm import FakeLLM, Reply

SIZES = (101, 1_091, 5_090)
TOOL = ToolSpec(name="get_financials", description="Financial statements.",
                parameters={"type": "object", "properties": {"query": {"type": "string"}}})


def transcript(count: int) -> list[Message]:
    """The query then tool rounds (assistant call + result) up to ``count`` messages."""
    out: list[Message] = [UserMessage("How did NVDA's margins evolve?")]
    n = 0
    while len(out) + 2 <= count:
        call = ToolCall(f"call_{n}", "get_financials", {"query": f"NVDA quarter {n}"})
        out.append(AssistantMessage(text=f"Reading quarter {n}.", tool_calls=(call,)))
        out.append(ToolResultMessage(call.id, call.name, f"revenue {n * 7.5:,.2f}M; " * 12))
        n += 1
    return out


async def time_size(model: OpenAIChatModel, fake: FakeLLM, count: int, repeat: int,
                    blocking: bool) -> float:
    """Median seconds of one request at ``count`` messages."""
    times = []
    for _ in range(repeat + 1):  # the first warms the connection and the imports
        request = ModelRequest(system="You are dexter.", messages=tuple(transcript(count)),
                               tools=(TOOL,), max_tokens=1_000)
        fake.enqueue(Reply(text="Margins rose."))
        start = time.perf_counter()
        if blocking:
            await model.complete(request)
        else:
            async for _item in generate(model, request, max_retries=0):
                pass
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


async def run(repeat: int) -> list[tuple[int, float, float]]:
    with FakeLLM() as fake:
        model = OpenAIChatModel(model="gpt-5.6-sol", api_key="sk-bench-0000",
                                base_url=fake.openai_base_url)
        try:
            return [(size, await time_size(model, fake, size, repeat, False),
                     await time_size(model, fake, size, repeat, True)) for size in SIZES]
        finally:
            await model.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Request-path time through the OpenAI SDK.")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print("request path benchmark: one request through the real OpenAI SDK, "
          "fake server over loopback answering at once (medians)")
    for size, streamed, blocking in asyncio.run(run(args.repeat)):
        print(f"  {size:>5,} messages: streamed {streamed * 1000:7.1f} ms, "
              f"blocking {blocking * 1000:7.1f} ms per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
