"""Parallel read tools: 8 concurrency-safe calls that each wait 0.5 s.

Run through the real executor, they should finish together in about 0.5 s (goal: under
0.7 s), versus 4 s if they ran one after another. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dexter.agent.executor import ToolExecutor, TurnResults
from dexter.config import Settings
from dexter.messages import ToolCall
from dexter.permissions.base import DefaultPermissions
from dexter.tools.base import Tool, ToolContext

CALLS = 8
WAIT = 0.5


class WaitArgs(BaseModel):
    seconds: float


class WaitTool(Tool[WaitArgs]):
    name: ClassVar[str] = "wait_read"
    description: ClassVar[str] = "Wait, read-only."
    params: ClassVar[type[BaseModel]] = WaitArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: WaitArgs, ctx: ToolContext) -> str:
        await asyncio.sleep(args.seconds)
        return "ok"


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(settings=Settings(), cwd=Path(tmp), home=Path(tmp))
        executor = ToolExecutor([WaitTool()], ctx, permissions=DefaultPermissions())
        calls = [ToolCall(f"c{i}", "wait_read", {"seconds": WAIT}) for i in range(CALLS)]
        started = time.perf_counter()
        results: TurnResults | None = None
        async for item in executor.execute(calls):
            if isinstance(item, TurnResults):
                results = item
        elapsed = time.perf_counter() - started
    assert results is not None
    serial = CALLS * WAIT
    print(f"{CALLS} read calls of {WAIT}s each: {elapsed:.3f} s wall time (goal < 0.7 s)")
    print(f"  serial would take {serial:.1f} s; speed-up x{serial / elapsed:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
