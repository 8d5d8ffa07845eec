"""The interactive session: prompt-toolkit input and rich output in one asyncio loop.

:class:`Repl` composes the parts: :class:`~dexter.repl.session.ReplSession` (the agent
session, the conversation, costs; no terminal), :class:`~dexter.repl.terminal.Terminal`
(the prompt, its keys and toolbar) and :class:`~dexter.repl.dialog_host.DialogHost`
(approvals and questions from the agent). What is left here is the input loop and the runs.

Input and the agent run side by side. ``PromptSession.prompt_async`` is awaited in a loop
the whole session, so the prompt stays usable while a run (an asyncio task) works: a line
typed then is queued as a follow-up (``❯ text (queued)``); the loop drains the queue
between tool rounds, and what is left when the run ends starts the next turn, whose
answer is shown like any other. Esc or Ctrl-C cancels the run task at once (streams and
tool calls included); the transcript is repaired and kept as history for the next
question, the scratchpad keeps what was written, and the prompt stays.

Why the live view is drawn by prompt-toolkit and not by rich's ``Live``: both want to own
the bottom of the terminal. ``Live`` moves the cursor up and rewrites its region on its
own thread while prompt-toolkit redraws the prompt below it; whichever drew last wins and
the other tears (half-erased spinners, duplicated prompt lines). So there is exactly one
painter for the changing part of the screen: prompt-toolkit (see :mod:`dexter.repl.terminal`).
Everything finished (the query, tool rows once done, notices, the answer, the stats line)
is printed by rich through ``patch_stdout(raw=True)``, which prints above the prompt and
redraws it, so scrollback only ever receives final lines. Dialogs (approvals, questions,
the model picker) replace the prompt while they are open and are erased when they close.

On a dumb terminal (``TERM=dumb``) there is no live region: prompt-toolkit falls back to
its line prompt and runs print plain lines. When stdin or stdout is not a terminal,
:meth:`Repl.run_lines` reads one question per line and prints plain lines (for scripts).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import AnyFormattedText
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.text import Text

from dexter.agent.conversation import Conversation
from dexter.agent.factory import Session, build_session
from dexter.agent.loop import Agent
from dexter.agent.queue import MessageQueue
from dexter.agent.sessions import SessionRecord, resume_line
from dexter.config import Settings
from dexter.config_trust import ConfigWatch
from dexter.frontend import EXIT_USAGE
from dexter.messages import Message
from dexter.providers.registry import ModelInfo
from dexter.render.live import LiveRenderer
from dexter.render.plain import PlainRenderer
from dexter.repl.commands import CommandRegistry, split_command
from dexter.repl.completion import ReplCompleter
from dexter.repl.cost import CostTracker, stats_with_cost
from dexter.repl.dialog_app import Dialog
from dexter.repl.dialog_host import DialogHost
from dexter.repl.handlers import argument_values, build_registry
from dexter.repl.session import ReplSession, RunRenderer, SessionBuilder
from dexter.repl.terminal import ConsoleStream, Terminal, quiet_cancelled
from dexter.repl.view import ERROR, MUTED, WARNING, ToolbarState, history_view, intro
from dexter.reports import Report

EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit"})
BUSY_MESSAGE = "busy, try after this run (esc interrupts it)"
HISTORY_FILE = Path("history") / "input"


class Repl:
    """One interactive session. ``run()`` drives a terminal; ``run_lines()`` a text stream."""

    def __init__(
        self,
        settings: Settings,
        *,
        console: Console,
        build: SessionBuilder = build_session,
        fancy: bool = True,
        color: bool = True,
        interactive: bool = True,
        use_patch_stdout: bool = False,
        handle_sigint: bool = False,
        history_path: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        resume: SessionRecord | None = None,
        watch: ConfigWatch | None = None,
    ) -> None:
        self.console = console
        self.fancy = fancy
        self.color = color
        self.interactive = interactive
        self.registry: CommandRegistry = build_registry()
        self.quitting = False
        self.exit_code = 0
        self.last_status = ""
        self._run_task: asyncio.Task[None] | None = None
        self.terminal = Terminal(
            self, console, fancy=fancy, color=color,
            history_path=history_path or settings.home_path / HISTORY_FILE, clock=clock,
            use_patch_stdout=use_patch_stdout, handle_sigint=handle_sigint)
        self.dialogs = DialogHost(self, self.terminal, interactive=interactive)
        self.core = ReplSession(
            settings, self, new_renderer=self._new_renderer, build=build,
            approver=self.dialogs.approve, interactive=interactive,
            request_user_input=self.dialogs.request_user_input if interactive else None,
            resume=resume, watch=watch)

    # -- the session's state (what the handlers see, see ReplLike) ----------------------------

    @property
    def settings(self) -> Settings:
        """The session's settings."""
        return self.core.settings

    @property
    def session(self) -> Session | None:
        """The agent session, or None when no model can run."""
        return self.core.session

    @property
    def agent(self) -> Agent | None:
        """The current agent, or None when no model can run."""
        return self.core.agent

    @property
    def conversation(self) -> Conversation:
        """The session's turns."""
        return self.core.conversation

    @property
    def queue(self) -> MessageQueue:
        """Follow-ups typed during a run."""
        return self.core.queue

    @property
    def costs(self) -> CostTracker:
        """The session's tokens and cost."""
        return self.core.costs

    @property
    def problem(self) -> str:
        """Why no model can run (with guidance), or empty."""
        return self.core.problem

    @property
    def context_tokens(self) -> int:
        """Estimated tokens of the next request (the toolbar shows it)."""
        return self.core.context_tokens

    @context_tokens.setter
    def context_tokens(self, tokens: int) -> None:
        self.core.context_tokens = tokens

    @property
    def last_report(self) -> Report | None:
        """The report of the last answered question, or None."""
        return self.core.last_report

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""
        return self._run_task is not None and not self._run_task.done()

    def open_session(self) -> bool:
        """Build the agent for the current settings (see ``ReplSession.open_session``)."""
        return self.core.open_session()

    async def rebuild(self) -> bool:
        """Rebuild the agent after a settings change (model, search provider, rules)."""
        return await self.core.rebuild()

    def new_session(self) -> None:
        """Go on in a new saved session (after ``/clear``); the old one stays resumable."""
        self.core.new_session()

    def _show_resumed(self) -> None:
        """For a resumed session: one line saying so, then its earlier turns."""
        if self.core.resumed:
            self.print(resume_line(self.core.record, self.model_label()), style=MUTED)
            conversation = self.conversation
            self.print(history_view(conversation.turns, conversation.summary))

    def model_label(self) -> str:
        """The model name for the toolbar and views."""
        return self.core.model_label()

    def threshold(self) -> int:
        """The current agent's context threshold (0 without an agent)."""
        return self.core.threshold()

    def next_request_view(self) -> list[Message]:
        """What the next question's request starts with: the system prompt and history."""
        return self.core.next_request_view()

    def tool_specs_tokens(self) -> int:
        """Estimated tokens of the tool definitions sent with every request."""
        return self.core.tool_specs_tokens()

    def estimate_next_request(self) -> int:
        """Estimated tokens of the next request before its question."""
        return self.core.estimate_next_request()

    async def show_dialog(self, dialog: Dialog) -> None:
        """Show a dialog from the input loop itself (slash commands)."""
        await self.dialogs.show_dialog(dialog)

    # -- what the terminal and the dialogs ask of the REPL -------------------------------------

    def live_view(self) -> LiveRenderer | None:
        """The current run's live renderer, if one is drawing."""
        renderer = self.core.renderer
        return renderer if isinstance(renderer, LiveRenderer) else None

    def toolbar_state(self, hint: str) -> ToolbarState:
        """What the bottom toolbar shows."""
        return ToolbarState(model=self.model_label(), tokens=self.context_tokens or 0,
                            threshold=self.threshold(), busy=self.busy,
                            queued=len(self.queue), hint=hint)

    def dialogs_waiting(self) -> bool:
        """Whether a run's dialog waits for the prompt to make room."""
        return self.dialogs.waiting

    # -- what the tests look at ---------------------------------------------------------------

    @property
    def dialogs_shown(self) -> int:
        """How many dialogs from runs were opened."""
        return self.dialogs.shown

    @property
    def _prompt(self) -> PromptSession[str] | None:
        return self.terminal.prompt

    @property
    def _close_dialog(self) -> Callable[[], None] | None:
        return self.dialogs.close_current

    @property
    def _renderer(self) -> RunRenderer | None:
        return self.core.renderer

    @_renderer.setter
    def _renderer(self, renderer: RunRenderer | None) -> None:
        self.core.renderer = renderer

    def _message(self) -> AnyFormattedText:
        return self.terminal.message()

    def _toolbar(self) -> str:
        return self.terminal.toolbar()

    # -- output -------------------------------------------------------------------------------

    def print(self, *items: RenderableType | str, style: str = "") -> None:
        """Print finished output above the prompt (it ends the live view's tool grouping)."""
        renderer = self.live_view()
        if renderer is not None:
            renderer.end_group()
        for item in items:
            if isinstance(item, str):
                self.console.print(Text(item, style=style))
            else:
                self.console.print(item)

    def note(self, text: str) -> None:
        """A muted one-line note."""
        self.print(text, style=MUTED)

    def warn(self, text: str) -> None:
        """A warning line."""
        self.print(text, style=WARNING)

    def error(self, text: str) -> None:
        """An error line."""
        self.console.print(Text("Error: ", style=f"bold {ERROR}") + Text(text))

    # -- runs -------------------------------------------------------------------------------

    def start_run(self, query: str) -> None:
        """Start answering ``query`` in the background (the prompt stays usable)."""
        self._run_task = asyncio.create_task(self._run_turns(query))
        self._run_task.add_done_callback(lambda _task: self.terminal.invalidate())
        self.terminal.invalidate()

    def interrupt(self) -> bool:
        """Cancel the current run at once. Returns whether there was one."""
        if not self.busy or self._run_task is None:
            return False
        self.core.interrupting = True
        if self.dialogs.close_current is not None:
            self.dialogs.close_current()
        self._run_task.cancel()
        return True

    def request_quit(self) -> None:
        """Leave the session (the current run is cancelled)."""
        self.quitting = True
        self.interrupt()
        self.terminal.wake_prompt()

    async def wait_idle(self) -> None:
        """Wait for the current run (and the turns queued behind it) to finish."""
        task = self._run_task
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run_turns(self, query: str) -> None:
        ticker = asyncio.create_task(self.terminal.tick()) if self.fancy else None
        try:
            next_query: str | None = query
            while next_query is not None and not self.quitting:
                status = await self.core.run_one(next_query)
                self.last_status = status
                leftover = self.queue.drain()
                if status == "interrupted":
                    if leftover:
                        self.terminal.stash = "\n\n".join(leftover)
                        self.note("Your queued messages are back in the prompt.")
                        self.terminal.wake_prompt()
                    return
                next_query = "\n\n".join(leftover) if leftover else None
        finally:
            if ticker is not None:
                ticker.cancel()

    def _new_renderer(self, price: ModelInfo | None) -> RunRenderer:
        if self.fancy:
            return LiveRenderer(self.console, live=False,
                                stats=lambda done: stats_with_cost(done, price))
        return PlainRenderer(cast(IO[str], ConsoleStream(self.console)))

    # -- the terminal front-end ----------------------------------------------------------------

    async def run(self) -> int:
        """The interactive session on the terminal. Returns the exit code."""
        with self.terminal.patched_stdout():
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(quiet_cancelled(loop.get_exception_handler()))
            self.open_session()
            self.context_tokens = self.estimate_next_request()
            self.print(intro(self.core.intro_info("esc" if self.fancy else "ctrl+c")))
            self._show_resumed()
            self.terminal.open(ReplCompleter(self.registry, self._argument_values))
            try:
                while not self.quitting:
                    if self.dialogs.waiting:
                        await self.dialogs.next_dialog()
                        continue
                    await self._read_and_submit()
            finally:
                await self._shutdown()
        # No model could run when the session ended (a missing key never fixed with
        # /model): a configuration error, exit 2 as for every other front end.
        return EXIT_USAGE if self.problem and self.exit_code == 0 else self.exit_code

    def _argument_values(self, command: str) -> list[str]:
        return argument_values(self, command)

    async def _read_and_submit(self) -> None:
        try:
            text = await self.terminal.read()
        except EOFError:
            self.quitting = True
            return
        if text is None:
            return
        task = asyncio.create_task(self.submit(text))
        with self.terminal.sigint_cancels(task):
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
                self.note("Cancelled.")
        if not self.fancy and self.busy:
            await self._follow_run()

    async def _follow_run(self) -> None:
        """A dumb terminal cannot redraw a prompt under the run's output, so no prompt is open
        while a run works: its lines print cleanly, its dialogs still show, Ctrl-C interrupts
        it, and lines typed meanwhile wait in the terminal until the prompt comes back."""
        run = self._run_task
        if run is None:
            return
        with self.terminal.sigint_cancels(run):
            while self.busy or self.dialogs.waiting:
                if self.dialogs.waiting:
                    await self.dialogs.next_dialog()
                    continue
                ready = asyncio.ensure_future(self.dialogs.wait_ready())
                try:
                    await asyncio.wait({run, ready}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ready.cancel()

    async def submit(self, text: str) -> None:
        """Handle one line of input: a command, an exit word, a question or a follow-up."""
        stripped = text.strip()
        if not stripped:
            return
        if stripped.lower() in EXIT_WORDS:
            self.request_quit()
            return
        parsed = split_command(stripped)
        if parsed is not None:
            # a dumb terminal keeps the typed line on screen (its prompt cannot be erased)
            await self.run_command(*parsed, echo=stripped if self.fancy else "")
            return
        if self.busy:
            self.queue.push(stripped)
            self.print(Text("❯ ", style=MUTED) + Text(stripped, style=MUTED)
                       + Text(" (queued)", style=MUTED))
            self.terminal.invalidate()
            return
        self.start_run(stripped)

    async def run_command(self, name: str, arg: str, *, echo: str = "") -> None:
        """Run a slash command (only read-only ones while a run is in progress)."""
        if echo:
            self.print(Text("❯ ", style="bold") + Text(echo, style="bold"))
        command = self.registry.get(name)
        if command is None:
            near = self.registry.suggest(name)
            tip = f" Did you mean /{near}?" if near else " Type /help to see the commands."
            self.warn(f"Unknown command /{name}.{tip}")
            return
        if self.busy and not command.read_only:
            self.note(f"/{command.name}: {BUSY_MESSAGE}")
            return
        try:
            await command.handler(self, arg)
        except Exception as exc:  # a failing command must not end the session
            self.error(f"/{command.name} failed: {escape(str(exc)) or type(exc).__name__}")

    async def _shutdown(self) -> None:
        if self.busy:
            self.interrupt()
            await self.wait_idle()
        await self.core.aclose()

    # -- the plain front-end ------------------------------------------------------------------

    async def run_lines(self, stream: IO[str]) -> int:
        """Read one question (or command) per line until EOF or ``exit``; print plain lines.

        Returns 0 when every run answered, 1 when one failed, and 2 at once, before reading
        anything, when no model can run (a missing key): no line could be answered.
        """
        if not self.open_session():
            self.warn(self.problem)
            await self.core.aclose()
            return EXIT_USAGE
        self._show_resumed()
        failed = False
        try:
            while not self.quitting:
                line = await asyncio.to_thread(stream.readline)
                if not line:
                    break
                stripped = line.strip()
                if not stripped:
                    continue
                if stripped.lower() in EXIT_WORDS:
                    break
                parsed = split_command(stripped)
                if parsed is not None:
                    await self.run_command(*parsed, echo=stripped)
                    continue
                self._run_task = asyncio.create_task(self._run_turns(stripped))
                await self.wait_idle()
                failed = failed or self.last_status != "ok"
        finally:
            await self.core.aclose()
        return 1 if failed else 0
