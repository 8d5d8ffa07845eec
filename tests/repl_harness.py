"""Drive the REPL through prompt-toolkit's pipe input against the fake LLM server."""

from __future__ import annotations

import asyncio
import functools
import io
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from pydantic import BaseModel
from rich.console import Console

from dexter.agent.factory import build_session
from dexter.agent.sessions import SessionRecord
from dexter.config import Settings, load_settings
from dexter.repl.app import Repl
from dexter.testing.fakellm import FakeLLM
from dexter.tools.base import Tool, ToolContext, ToolOutput
from dexter.tools.calculator import CalculatorTool
from tests.cli_helpers import LIVENESS

ENTER = "\r"
ESC = "\x1b"
CTRL_C = "\x03"
CTRL_D = "\x04"
UP = "\x1b[A"
DOWN = "\x1b[B"


class NoteParams(BaseModel):
    text: str


class WriteNoteTool(Tool[NoteParams]):
    """A tool that needs approval; records what it wrote."""

    name: ClassVar[str] = "write_note"
    description: ClassVar[str] = "Write a note to the user's notebook."
    params: ClassVar[type[BaseModel]] = NoteParams
    needs_approval: ClassVar[bool] = True

    def __init__(self) -> None:
        self.written: list[str] = []

    async def run(self, args: NoteParams, ctx: ToolContext) -> ToolOutput:
        self.written.append(args.text)
        return ToolOutput(f"wrote {args.text!r}")


class AskParams(BaseModel):
    questions: list[dict[str, Any]]


class AskTool(Tool[AskParams]):
    """Calls ``ctx.request_user_input`` like ``ask_user_question`` does."""

    name: ClassVar[str] = "ask_user_question"
    description: ClassVar[str] = "Ask the user."
    params: ClassVar[type[BaseModel]] = AskParams

    def __init__(self) -> None:
        self.replies: list[Any] = []

    async def run(self, args: AskParams, ctx: ToolContext) -> ToolOutput:
        assert ctx.request_user_input is not None
        reply = await ctx.request_user_input(args.questions)
        self.replies.append(reply)
        return ToolOutput(json.dumps(reply))


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings with all state under ``tmp_path``, memory off, and the number check off:
    the scripted answers of REPL tests state figures no tool fetched (the check's own REPL
    test turns it on)."""
    values = {"home": str(tmp_path / ".dexter"), "scratchpad_dir": str(tmp_path / "pads"),
              "memory.enabled": False, "verify.enabled": False, "model": "gpt-4.1",
              **overrides}
    return load_settings(overrides=values, env={})


def recording_console(width: int = 100) -> Console:
    return Console(record=True, width=width, file=io.StringIO(), force_terminal=False,
                   color_system=None, highlight=False)


class Driver:
    """Types into the REPL and waits for what it prints."""

    def __init__(self, repl: Repl, pipe: PipeInput, console: Console, task: asyncio.Task[int]):
        self.repl = repl
        self.pipe = pipe
        self.console = console
        self.task = task

    @property
    def text(self) -> str:
        return self.console.export_text(clear=False)

    def type(self, text: str) -> None:
        self.pipe.send_text(text)

    def line(self, text: str) -> None:
        self.pipe.send_text(text + ENTER)

    async def wait_for(self, needle: str, timeout: float = LIVENESS, count: int = 1) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.task.done():
                self.task.result()  # raise what ended the REPL
            text = self.text
            if text.count(needle) >= count:
                return text
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {needle!r}; screen so far:\n{self.text}")

    async def wait_until(self, check: Callable[[], bool], what: str, timeout: float = LIVENESS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting until {what}; screen so far:\n{self.text}")

    async def ask(self, question: str, expect: str, timeout: float = LIVENESS) -> str:
        """Type a question, wait for ``expect`` and for the run to end; returns the screen."""
        self.line(question)
        await self.wait_for(expect, timeout)
        await self.wait_idle(timeout)
        return self.text

    async def wait_dialog(self, count: int = 1, timeout: float = LIVENESS) -> None:
        """Until the ``count``-th dialog is on screen (and ready for keys)."""
        def shown() -> bool:
            return self.repl.dialogs_shown >= count and self.repl._close_dialog is not None
        await self.wait_until(shown, f"dialog {count} shows", timeout)
        await asyncio.sleep(0.05)

    async def wait_idle(self, timeout: float = LIVENESS) -> None:
        await self.wait_until(lambda: not self.repl.busy, "the run finished", timeout)

    async def wait_prompt(self, timeout: float = LIVENESS) -> None:
        """Until the input prompt is running (so typed keys reach it)."""
        def ready() -> bool:
            prompt = self.repl._prompt
            return prompt is not None and prompt.app.is_running
        await self.wait_until(ready, "the prompt is ready", timeout)

    async def quit(self, timeout: float = LIVENESS) -> int:
        if not self.task.done():
            self.line("/exit")
        return await asyncio.wait_for(self.task, timeout)


@asynccontextmanager
async def running_repl(settings: Settings, *, tools: list[Tool[Any]] | None = None,
                       width: int = 100, fancy: bool = True,
                       resume: SessionRecord | None = None) -> AsyncIterator[Driver]:
    """A REPL on a pipe input and a recording console (``resume``: reopening that saved
    session); quits and checks it ended."""
    console = recording_console(width)
    build = functools.partial(build_session, tools=tools or [CalculatorTool()])
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        repl = Repl(settings, console=console, build=build, fancy=fancy, color=False,
                    resume=resume)
        task = asyncio.create_task(repl.run())
        driver = Driver(repl, pipe, console, task)
        try:
            await driver.wait_prompt()
            yield driver
        finally:
            if not task.done():
                repl.request_quit()
                try:
                    await asyncio.wait_for(task, 10)
                except (TimeoutError, asyncio.CancelledError):
                    task.cancel()


def request_texts(fake: FakeLLM) -> list[str]:
    """Each model request's messages as one JSON string."""
    return [json.dumps(r.body.get("messages", [])) for r in fake.requests_for("openai")]
