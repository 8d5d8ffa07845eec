"""Agent-loop overhead per iteration with a zero-latency in-process model.

Builds a transcript of about 200 messages, then times iterations of the real loop
(repair, microcompact, strip thinking, the model call through ``generate``, the
executor, result governance, the threshold check, the scratchpad write) with a model that
answers instantly and a tool that returns at once. Goal: under 5 ms per iteration at 200
messages. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.agent.conversation import Conversation
from dexter.agent.loop import Agent, AgentSetup
from dexter.config import Settings
from dexter.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from dexter.testing.scripted import ScriptedModel
from dexter.tools.calculator import CalculatorTool

HISTORY_ROUNDS = 66  # 66 x (assistant + tool result + note) ~ 200 messages
ITERATIONS = 40


def history() -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    messages: list[UserMessage | AssistantMessage | ToolResultMessage] = []
    for i in range(HISTORY_ROUNDS):
        call = ToolCall(f"h{i}", "calculator", {"expression": f"{i}*3"})
        messages.append(AssistantMessage(text=f"step {i}", tool_calls=(call,)))
        messages.append(ToolResultMessage(call.id, "calculator", f'{{"data": {{"result": {i * 3}}}}}'))
        messages.append(UserMessage(f"note {i}", kind="note"))
    return messages


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=f"{tmp}/home", scratchpad_dir=f"{tmp}/pads")
        settings.max_iterations = ITERATIONS + 1
        settings.memory.enabled = False
        replies: list[object] = [
            AssistantMessage(tool_calls=(ToolCall(f"c{i}", "calculator", {"expression": "1+1"}),))
            for i in range(ITERATIONS)
        ]
        model = ScriptedModel([*replies, "done"])  # type: ignore[list-item]
        agent = Agent(AgentSetup(
            settings=settings, model=model, fast_model=model, context_window=10_000_000,
            fast_context_window=10_000_000, tools=[CalculatorTool()],
            system_prompt="benchmark",
        ))
        conversation = Conversation()  # earlier-session messages come from the conversation
        earlier = history()
        conversation.messages = lambda: list(earlier)  # type: ignore[method-assign]
        stamps: list[float] = []
        async for event in agent.run("benchmark", conversation):
            if event.type == "tool_end":
                stamps.append(time.perf_counter())
        gaps = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
        size = len(agent.messages)
    print(f"loop overhead per iteration at ~{size} messages (zero-latency model)")
    print(f"  median {statistics.median(gaps):.2f} ms   p95 {sorted(gaps)[int(len(gaps) * 0.95)]:.2f} ms"
          f"   max {max(gaps):.2f} ms   over {len(gaps)} iterations")
    print(f"  goal: < 5 ms   ratio to goal: {statistics.median(gaps) / 5:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
