"""Approvals and questions from the agent, shown as dialogs in place of the prompt.

A run asks from its own task (the approver, ``request_user_input``): :meth:`DialogHost.show`
queues the dialog and wakes the prompt, and the input loop, which owns the terminal, runs
it (:meth:`DialogHost.next_dialog`) and resolves the run's wait. An interrupted run closes
the open dialog at once. On a full terminal dialogs are prompt-toolkit applications
(:mod:`dexter.repl.dialog_app`); on a dumb one they are printed and answered with a line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from prompt_toolkit import PromptSession

from dexter.agent.executor import ApprovalRequest
from dexter.events import ApprovalChoice
from dexter.render.live import LiveRenderer
from dexter.repl.dialog_app import Dialog, run_dialog
from dexter.repl.dialogs import (
    ABORT,
    ApprovalDialog,
    QuestionDialog,
    QuestionError,
    SelectDialog,
    answered_lines,
)
from dexter.repl.protocol import Output
from dexter.repl.terminal import Terminal
from dexter.text import escape_controls_value

LINE_DIALOG_HINT = "Type a number and press enter (enter alone: the marked one; n: no)."

Closer = Callable[[], None]


class DialogOwner(Output, Protocol):
    """What the dialog host needs from the REPL around it."""

    def interrupt(self) -> bool:
        """Cancel the current run; returns whether there was one."""

    def live_view(self) -> LiveRenderer | None:
        """The current run's live renderer, if one is drawing (paused under a dialog)."""


class DialogHost:
    """The dialogs of one REPL: those a run waits on, and those a command shows."""

    def __init__(self, owner: DialogOwner, terminal: Terminal, *, interactive: bool) -> None:
        self.owner = owner
        self.terminal = terminal
        self.interactive = interactive
        self.shown = 0
        """How many dialogs from runs were opened (tests wait on it)."""
        self.close_current: Closer | None = None
        """Closes the open dialog from a run as if Ctrl-C was pressed."""
        self._waiting: deque[tuple[Dialog, asyncio.Future[None]]] = deque()
        self._ready = asyncio.Event()

    @property
    def waiting(self) -> bool:
        """Whether a run's dialog waits to be shown."""
        return bool(self._waiting)

    # -- what a run asks ----------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice:
        """Ask whether a tool call may run (denied when nobody can answer)."""
        if not self.interactive:
            self.owner.warn(
                f"{request.tool} needs approval, and input is not a terminal: denied.")
            return "deny"
        # shown with control characters made visible: the command or diff may come from a
        # fetched page; the decision itself is about the request as it is
        dialog = ApprovalDialog(escape_controls_value(request), width=self.terminal.width())
        await self.show(dialog)
        if dialog.result == ABORT:
            self.owner.interrupt()
        return dialog.choice

    async def request_user_input(self, questions: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Ask the agent's questions; the answers, a decline, or None when they cannot show."""
        try:
            dialog = QuestionDialog(escape_controls_value(questions))
        except QuestionError as exc:
            self.owner.warn(f"Could not show the questions: {exc}")
            return None
        await self.show(dialog)
        if dialog.aborted:
            self.owner.interrupt()
            return {"answers": [], "declined": True}
        result = dialog.result or {"answers": [], "declined": True}
        if result.get("declined"):
            self.owner.note("⏺ Skipped the questions.")
        else:
            self.owner.print(*answered_lines(result))
        return result

    async def show(self, dialog: Dialog) -> None:
        """Show a dialog from a run: the input loop closes the prompt and runs it."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (dialog, future)
        self._waiting.append(entry)
        self._ready.set()
        self.terminal.wake_prompt()
        try:
            await future
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            dialog.handle("abort")
            if self.close_current is not None:
                self.close_current()
            raise

    # -- the input loop's side ----------------------------------------------------------------

    async def next_dialog(self) -> None:
        """Show the oldest waiting dialog and let its run go on."""
        dialog, future = self._waiting.popleft()
        if not dialog.done:
            renderer = self.owner.live_view()
            pause = renderer.paused() if renderer is not None else contextlib.nullcontext()

            def register(close: Closer) -> None:
                self.close_current = close
                self.shown += 1

            try:
                with pause:
                    if self.terminal.fancy:
                        await run_dialog(dialog, color=self.terminal.color, on_open=register)
                    else:
                        await self._line_dialog(dialog, register)
            finally:
                self.close_current = None
        if not future.done():
            future.set_result(None)

    async def wait_ready(self) -> None:
        """Until a run queues a dialog (returns at once when one waits)."""
        if not self._waiting:
            self._ready.clear()
            await self._ready.wait()

    async def show_dialog(self, dialog: Dialog) -> None:
        """Show a dialog from the input loop itself (slash commands)."""
        if self.terminal.fancy:
            await run_dialog(dialog, color=self.terminal.color)
        else:
            await self._line_dialog(dialog, lambda _close: None)

    async def _line_dialog(self, dialog: Dialog, register: Callable[[Closer], None]) -> None:
        """A dialog for dumb terminals: print it, read the choice as a line.

        A number picks (several numbers toggle in a multi-select, then confirm), an empty
        line confirms the highlighted option, ``esc`` or ``n`` cancels.
        """
        session: PromptSession[str] = PromptSession()

        def close() -> None:
            dialog.handle("abort")
            if session.app.is_running and session.app.future is not None \
                    and not session.app.future.done():
                session.app.exit(result="")

        register(close)
        show = True
        while not dialog.done:
            if show:
                self.owner.print(dialog.render())
                if not dialog.text_mode:
                    self.owner.note(LINE_DIALOG_HINT)
            try:
                answer = (await session.prompt_async("  › ")).strip()
            except (EOFError, KeyboardInterrupt):
                dialog.handle("abort")
                break
            if dialog.done:
                break
            show = _apply_line(dialog, answer)
            if not show:
                self.owner.warn(f"Not an option: {answer!r}. {LINE_DIALOG_HINT}")


def _apply_line(dialog: Dialog, answer: str) -> bool:
    """Turn a typed line into dialog keys (see ``DialogHost._line_dialog``).

    Returns False for a line that is not an answer (it is ignored: "deny" typed in words
    must never fall through to the highlighted "Yes").
    """
    if dialog.text_mode:
        dialog.handle("text-enter" if answer else "text-escape", answer)
        return True
    if answer.lower() in ("esc", "n", "no", "q"):
        dialog.handle("escape")
        return True
    numbers = answer.replace(",", " ").split()
    if numbers and all(n.isdigit() for n in numbers):
        if isinstance(dialog, SelectDialog):
            if len(numbers) != 1 or not 1 <= int(numbers[0]) <= len(dialog.options):
                return False
            dialog.pick(int(numbers[0]))
            return True
        multi = bool(getattr(getattr(dialog, "current", None), "multi", False))
        for number in numbers:
            dialog.handle(number)
        if multi and not dialog.done and not dialog.text_mode:
            dialog.handle("enter")
        return True
    if answer:
        return False
    dialog.handle("enter")
    return True
