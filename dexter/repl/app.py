"""The interactive session: prompt-toolkit input and rich output in one asyncio loop.

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
painter for the changing part of the screen: prompt-toolkit. The working line and the
running tool rows (``LiveRenderer.live_region()``, rendered by rich to ANSI text) are part
of the prompt's message, above the input line, and a ticker invalidates the prompt at a
steady 12 frames per second (never per chunk). Everything finished (the query, tool rows
once done, notices, the answer, the stats line) is printed by rich through
``patch_stdout(raw=True)``, which prints above the prompt and redraws it, so scrollback
only ever receives final lines. Dialogs (approvals, questions, the model picker) replace
the prompt while they are open and are erased when they close.

On a dumb terminal (``TERM=dumb``) there is no live region: prompt-toolkit falls back to
its line prompt and runs print plain lines. When stdin or stdout is not a terminal,
:meth:`Repl.run_lines` reads one question per line and prints plain lines (for scripts).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.text import Text

from dexter import __version__
from dexter.agent.conversation import Conversation, append_session_log
from dexter.agent.executor import ApprovalRequest
from dexter.agent.factory import Session, build_session, shell_notice
from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError, Settings
from dexter.context.tokens import estimate_message_tokens, estimate_tool_specs_tokens
from dexter.events import ApprovalChoice, Done, Event, ToolEnd, ToolProgress, ToolStart
from dexter.messages import Message, SystemMessage
from dexter.providers.base import ToolSpec
from dexter.providers.registry import api_key_for, resolve_model
from dexter.render.live import LiveRenderer
from dexter.render.plain import PlainRenderer
from dexter.repl.commands import CommandRegistry, split_command
from dexter.repl.completion import ReplCompleter
from dexter.repl.cost import CostTracker, format_cost, model_price, stats_with_cost, usage_cost
from dexter.repl.dialog_app import ESCAPE_DELAY_S, Dialog, run_dialog
from dexter.repl.dialogs import (
    ABORT,
    ApprovalDialog,
    QuestionDialog,
    QuestionError,
    SelectDialog,
    answered_lines,
)
from dexter.repl.view import (
    ERROR,
    MUTED,
    WARNING,
    IntroInfo,
    ToolbarState,
    intro,
    key_problem,
    render_ansi,
    toolbar_text,
)
from dexter.secrets import scrub, scrub_value
from dexter.text import clean_value

SessionBuilder = Callable[..., Session]
"""``build_session``-compatible: ``(settings, *, approver, interactive, queue, ...)``."""

WAKE = "\x00wake"
"""A prompt result that is not input: the prompt was closed to show a dialog or to quit."""
EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit"})
DOUBLE_PRESS_S = 2.0
FRAME_S = 1 / 12
INTERRUPTED_LINE = "Interrupted · what should dexter do instead?"
BUSY_MESSAGE = "busy, try after this run (esc interrupts it)"
LINE_DIALOG_HINT = "Type a number and press enter (enter alone: the marked one; n: no)."
HISTORY_FILE = Path("history") / "input"
ASK_TOOL = "ask_user_question"

_STYLE = Style.from_dict({
    "bottom-toolbar": "noreverse #a6a6a6",
    "bottom-toolbar.text": "noreverse",
})


async def close_session(session: Session | None) -> None:
    """Close the session's model clients (errors while closing are not interesting)."""
    if session is not None:
        await session.aclose()


class ScrubbedFileHistory(FileHistory):
    """The input history file, without any secret value the user pasted."""

    def store_string(self, string: str) -> None:
        super().store_string(scrub(string))


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
    ) -> None:
        from dexter.repl.handlers import build_registry

        self.settings = settings
        self.console = console
        self.fancy = fancy
        self.color = color
        self.interactive = interactive
        self._build = build
        self._use_patch_stdout = use_patch_stdout
        self._handle_sigint = handle_sigint
        self._clock = clock
        self.queue = MessageQueue()
        self.conversation = Conversation()
        self.costs = CostTracker()
        self.registry: CommandRegistry = build_registry()
        self.session: Session | None = None
        self.problem = ""
        self.context_tokens = 0
        self.quitting = False
        self.exit_code = 0
        self.last_status = ""
        self._run_task: asyncio.Task[None] | None = None
        self._interrupting = False
        self._renderer: LiveRenderer | PlainRenderer | None = None
        self._dialogs: deque[tuple[Dialog, asyncio.Future[None]]] = deque()
        self._dialog_ready = asyncio.Event()
        self._close_dialog: Callable[[], None] | None = None
        self.dialogs_shown = 0
        self._stash = ""
        self._armed: tuple[str, float] | None = None
        self._history_path = history_path or settings.home_path / HISTORY_FILE
        self._recall: tuple[Any, str] | None = None
        """The memory recalled when the session opened: frozen for the session's life."""
        self._prompt: PromptSession[str] | None = None

    # -- state ------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""
        return self._run_task is not None and not self._run_task.done()

    @property
    def agent(self) -> Any:
        """The current agent, or None when no model can run."""
        return self.session.agent if self.session is not None else None

    def print(self, *items: RenderableType | str, style: str = "") -> None:
        """Print finished output above the prompt (it ends the live view's tool grouping)."""
        renderer = self._renderer
        if isinstance(renderer, LiveRenderer):
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

    # -- the session ------------------------------------------------------------------------

    def open_session(self) -> bool:
        """Build the agent for the current settings; on a configuration problem keep none.

        Returns whether a model can run. The problem (e.g. a missing key) is kept in
        ``problem`` with guidance on how to fix it.
        """
        frozen = self._recall
        try:
            session = self._build(
                self.settings, approver=self._approve, interactive=self.interactive,
                queue=self.queue,
                request_user_input=self._request_user_input if self.interactive else None,
                **({"recall": frozen} if frozen is not None else {}),
            )
        except ConfigError as exc:
            self.session = None
            self.problem = key_problem(str(exc), self._missing_key_var())
            return False
        if frozen is None:
            self._recall = (session.recalled, session.memory_text)
            notice = shell_notice(session)
            if notice:
                self.warn(notice)
        else:
            # the recall is the session's, loaded once (the conversation says it once)
            session.recalled = frozen[0]
        self.session = session
        self.problem = ""
        return True

    def _missing_key_var(self) -> str | None:
        try:
            provider = resolve_model(self.settings.model, self.settings).provider
        except ConfigError:
            return None
        if provider.api_key_env and api_key_for(provider) is None:
            return provider.api_key_env
        return None

    async def rebuild(self) -> bool:
        """Rebuild the agent after a settings change (model, search provider, rules)."""
        old = self.session
        ok = self.open_session()
        if old is not None and old is not self.session:
            await close_session(old)
        return ok

    def model_label(self) -> str:
        """The model name for the toolbar and views."""
        return self.session.model_name if self.session is not None else self.settings.model

    def threshold(self) -> int:
        """The current agent's context threshold (0 without an agent)."""
        agent = self.agent
        return int(agent.threshold) if agent is not None else 0

    def next_request_view(self) -> list[Message]:
        """What the next question's request starts with: the system prompt and history."""
        agent = self.agent
        system = agent.setup.system_prompt if agent is not None else ""
        return [SystemMessage(system), *self.conversation.messages()]

    def tool_specs_tokens(self) -> int:
        """Estimated tokens of the tool definitions sent with every request."""
        agent = self.agent
        if agent is None:
            return 0
        specs = [ToolSpec(t.name, t.description, t.json_schema()) for t in agent.setup.tools]
        return estimate_tool_specs_tokens(specs)

    def estimate_next_request(self) -> int:
        """Estimated tokens of the next request before its question."""
        return estimate_message_tokens(self.next_request_view()) + self.tool_specs_tokens()

    def intro_info(self) -> IntroInfo:
        """What the intro shows for the current settings."""
        try:
            resolved = resolve_model(self.settings.model, self.settings)
            display, provider = resolved.display_name, resolved.provider.display_name
        except ConfigError:
            display, provider = self.settings.model, ""
        return IntroInfo(
            version=__version__, model=self.settings.model, model_display=display,
            provider=provider, home=str(self.settings.home_path),
            scratchpads=str(self.settings.scratchpad_path), problem=self.problem,
            interrupt_key="esc" if self.fancy else "ctrl+c",
        )

    # -- runs -------------------------------------------------------------------------------

    def start_run(self, query: str) -> None:
        """Start answering ``query`` in the background (the prompt stays usable)."""
        self._run_task = asyncio.create_task(self._run_turns(query))
        self._run_task.add_done_callback(lambda _task: self._invalidate())
        self._invalidate()

    def interrupt(self) -> bool:
        """Cancel the current run at once. Returns whether there was one."""
        if not self.busy or self._run_task is None:
            return False
        self._interrupting = True
        if self._close_dialog is not None:
            self._close_dialog()
        self._run_task.cancel()
        return True

    async def wait_idle(self) -> None:
        """Wait for the current run (and the turns queued behind it) to finish."""
        task = self._run_task
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run_turns(self, query: str) -> None:
        ticker = asyncio.create_task(self._tick()) if self.fancy else None
        try:
            next_query: str | None = query
            while next_query is not None and not self.quitting:
                status = await self._run_one(next_query)
                self.last_status = status
                leftover = self.queue.drain()
                if status == "interrupted":
                    if leftover:
                        self._stash = "\n\n".join(leftover)
                        self.note("Your queued messages are back in the prompt.")
                        self._wake_prompt()
                    return
                next_query = "\n\n".join(leftover) if leftover else None
        finally:
            if ticker is not None:
                ticker.cancel()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(FRAME_S)
            self._invalidate()

    def _new_renderer(self, price: Any) -> LiveRenderer | PlainRenderer:
        if self.fancy:
            return LiveRenderer(self.console, live=False,
                                stats=lambda done: stats_with_cost(done, price))
        return PlainRenderer(cast(IO[str], ConsoleStream(self.console)))

    async def _run_one(self, query: str) -> str:
        """One run, rendered. Returns its status (``interrupted`` when cancelled by the user)."""
        session = self.session
        if session is None:
            self.warn(self.problem or "No model is ready. Pick one with /model.")
            return "error"
        agent = session.agent
        price = model_price(self.settings.model, self.settings)
        renderer = self._new_renderer(price)
        self._renderer = renderer
        done: Done | None = None
        try:
            async for event in agent.run(query, self.conversation):
                if isinstance(event, Done):
                    done = event
                if not shown_elsewhere(event):
                    renderer.handle(scrub_value(clean_value(event)))
        except asyncio.CancelledError:
            if not self._interrupting:
                raise
            self._interrupting = False
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            renderer.close()
            self._record_interrupt(agent)
            return "interrupted"
        except Exception as exc:  # a bug in a stage must not end the session
            renderer.close()
            self.error(f"The run failed unexpectedly: {type(exc).__name__}: {exc}")
            return "error"
        finally:
            self._renderer = None
        if done is None:
            self.error("The run ended without an answer.")
            return "error"
        if isinstance(renderer, PlainRenderer) and price is not None:
            cost = usage_cost(done.token_usage, price)
            if cost is not None:
                self.note(f"~{format_cost(cost)} estimated")
        self._record_done(done, price)
        return done.status

    def _record_done(self, done: Done, price: Any) -> None:
        turn = self.conversation.latest  # the run added its turn
        agent = self.agent
        if turn is not None:
            # the answer is on screen by now; its summary is written in the background
            self.conversation.summarize_later(
                turn, agent.setup.fast_model if agent is not None else None)
            if done.status == "ok":
                problem = append_session_log(self.settings.home_path, turn)
                if problem:
                    self.note(problem)
        self.costs.add(self.settings.model, done.token_usage, price)
        self.context_tokens = done.context_tokens

    def _record_interrupt(self, agent: Any) -> None:
        """Say so; the run kept its repaired transcript as the turn and wrote the record."""
        self.context_tokens = context_estimate(agent, agent.messages)
        self.print(INTERRUPTED_LINE, style=WARNING)

    # -- prompts from the agent ---------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> ApprovalChoice:
        if not self.interactive:
            self.warn(f"{request.tool} needs approval, and input is not a terminal: denied.")
            return "deny"
        dialog = ApprovalDialog(request, width=self._width())
        await self._show(dialog)
        if dialog.result == ABORT:
            self.interrupt()
        return dialog.choice

    async def _request_user_input(self, questions: list[dict[str, Any]]) -> dict[str, Any] | None:
        try:
            dialog = QuestionDialog(questions)
        except QuestionError as exc:
            self.warn(f"Could not show the questions: {exc}")
            return None
        await self._show(dialog)
        if dialog.aborted:
            self.interrupt()
            return {"answers": [], "declined": True}
        result = dialog.result or {"answers": [], "declined": True}
        if result.get("declined"):
            self.note("⏺ Skipped the questions.")
        else:
            self.print(*answered_lines(result))
        return result

    async def _show(self, dialog: Dialog) -> None:
        """Show a dialog from a run: the input loop closes the prompt and runs it."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (dialog, future)
        self._dialogs.append(entry)
        self._dialog_ready.set()
        self._wake_prompt()
        try:
            await future
        except asyncio.CancelledError:
            if entry in self._dialogs:
                self._dialogs.remove(entry)
            dialog.handle("abort")
            if self._close_dialog is not None:
                self._close_dialog()
            raise

    async def _next_dialog(self) -> None:
        dialog, future = self._dialogs.popleft()
        if not dialog.done:
            renderer = self._renderer
            pause = renderer.paused() if isinstance(renderer, LiveRenderer) else _nothing()

            def register(close: Callable[[], None]) -> None:
                self._close_dialog = close
                self.dialogs_shown += 1

            try:
                with pause:
                    if self.fancy:
                        await run_dialog(dialog, color=self.color, on_open=register)
                    else:
                        await self._line_dialog(dialog, register)
            finally:
                self._close_dialog = None
        if not future.done():
            future.set_result(None)

    async def show_dialog(self, dialog: Dialog) -> None:
        """Show a dialog from the input loop itself (slash commands)."""
        if self.fancy:
            await run_dialog(dialog, color=self.color)
        else:
            await self._line_dialog(dialog, lambda _close: None)

    async def _line_dialog(self, dialog: Dialog,
                           register: Callable[[Callable[[], None]], None]) -> None:
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
                self.print(dialog.render())
                if not dialog.text_mode:
                    self.note(LINE_DIALOG_HINT)
            try:
                answer = (await session.prompt_async("  › ")).strip()
            except (EOFError, KeyboardInterrupt):
                dialog.handle("abort")
                break
            if dialog.done:
                break
            show = _apply_line(dialog, answer)
            if not show:
                self.warn(f"Not an option: {answer!r}. {LINE_DIALOG_HINT}")

    # -- the terminal front-end ----------------------------------------------------------------

    def _width(self) -> int:
        app = get_app_or_none()
        if app is not None:
            with contextlib.suppress(Exception):
                return max(20, app.output.get_size().columns - 1)
        return max(20, self.console.width - 1)

    def _invalidate(self) -> None:
        prompt = self._prompt
        if prompt is not None and prompt.app.is_running:
            prompt.app.invalidate()

    def _wake_prompt(self) -> None:
        """Close the running prompt (keeping what was typed) so the input loop looks again."""
        prompt = self._prompt
        if prompt is None:
            return
        app = prompt.app
        if app.is_running and app.future is not None and not app.future.done():
            typed = prompt.default_buffer.text
            if typed and not self._stash:
                self._stash = typed
            app.exit(result=WAKE)

    def _pre_run(self) -> None:
        if self._dialogs or self.quitting:
            self._wake_prompt()

    def _message(self) -> AnyFormattedText:
        renderer = self._renderer
        prompt = "\x1b[1m❯\x1b[0m " if self.color else "❯ "
        if self.fancy and isinstance(renderer, LiveRenderer) and renderer.running:
            region = render_ansi(renderer.live_region(), self._width(), self.color)
            if region.strip():
                return ANSI(region.rstrip("\n") + "\n" + prompt)
        return ANSI(prompt)

    def _toolbar(self) -> str:
        hint = ""
        if self._armed is not None and self._clock() - self._armed[1] <= DOUBLE_PRESS_S:
            hint = {"ctrl-c": "press ctrl+c again to exit",
                    "escape": "esc again to clear"}[self._armed[0]]
        tokens = self.context_tokens or 0
        return toolbar_text(ToolbarState(model=self.model_label(), tokens=tokens,
                                         threshold=self.threshold(), busy=self.busy,
                                         queued=len(self.queue), hint=hint), self._width())

    def _pressed_twice(self, key: str) -> bool:
        now = self._clock()
        armed = self._armed
        if armed is not None and armed[0] == key and now - armed[1] <= DOUBLE_PRESS_S:
            self._armed = None
            return True
        self._armed = (key, now)
        return False

    def request_quit(self) -> None:
        """Leave the session (the current run is cancelled)."""
        self.quitting = True
        self.interrupt()
        self._wake_prompt()

    def _key_bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("enter")
        def _send(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
                return
            buffer.validate_and_handle()

        @kb.add("escape", "enter")
        @kb.add("c-j")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("escape")
        def _escape(event: KeyPressEvent) -> None:
            if self.interrupt():
                return
            buffer = event.current_buffer
            if buffer.complete_state is not None:
                buffer.cancel_completion()
            elif buffer.text and self._pressed_twice("escape"):
                buffer.reset()

        @kb.add("c-c", eager=True)
        def _ctrl_c(event: KeyPressEvent) -> None:
            if self.interrupt():
                return
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
            elif self._pressed_twice("ctrl-c"):
                self.request_quit()

        @kb.add("c-d", filter=_empty_buffer())
        def _ctrl_d(_event: KeyPressEvent) -> None:
            self.request_quit()

        return kb

    def _make_prompt(self) -> PromptSession[str]:
        return PromptSession(
            history=self._input_history(),
            completer=ReplCompleter(self.registry, self._argument_values),
            complete_while_typing=True,
            multiline=True,
            key_bindings=self._key_bindings(),
            bottom_toolbar=self._toolbar if self.fancy else None,
            erase_when_done=True,
            prompt_continuation="  ",
            style=_STYLE,
            include_default_pygments_style=False,
        )

    def _input_history(self) -> History:
        path = self._history_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=True)
        except OSError as exc:
            self.note(f"Input history is not saved ({path}: {exc.strerror}).")
            return InMemoryHistory()
        return ScrubbedFileHistory(str(path))

    def _argument_values(self, command: str) -> list[str]:
        from dexter.repl.handlers import argument_values

        return argument_values(self, command)

    async def run(self) -> int:
        """The interactive session on the terminal. Returns the exit code."""
        with patch_stdout(raw=True) if self._use_patch_stdout else _nothing():
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(quiet_cancelled(loop.get_exception_handler()))
            self.open_session()
            self.context_tokens = self.estimate_next_request()
            self.print(intro(self.intro_info()))
            self._prompt = self._make_prompt()
            app = self._prompt.app
            app.ttimeoutlen = ESCAPE_DELAY_S
            app.timeoutlen = ESCAPE_DELAY_S * 3
            try:
                while not self.quitting:
                    if self._dialogs:
                        await self._next_dialog()
                        continue
                    await self._read_and_submit()
            finally:
                await self._shutdown()
        return self.exit_code

    async def _read_and_submit(self) -> None:
        assert self._prompt is not None
        default, self._stash = self._stash, ""
        try:
            text = await self._prompt.prompt_async(self._message, default=default,
                                                   pre_run=self._pre_run)
        except EOFError:
            self.quitting = True
            return
        except KeyboardInterrupt:
            return
        if text == WAKE:
            return
        task = asyncio.create_task(self.submit(text))
        with self._sigint_cancels(task):
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
        with self._sigint_cancels(run):
            while self.busy or self._dialogs:
                if self._dialogs:
                    await self._next_dialog()
                    continue
                self._dialog_ready.clear()
                ready = asyncio.ensure_future(self._dialog_ready.wait())
                try:
                    await asyncio.wait({run, ready}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ready.cancel()

    @contextlib.contextmanager
    def _sigint_cancels(self, task: asyncio.Task[None]) -> Iterator[None]:
        """While a command works the terminal is not in raw mode, so Ctrl-C is a signal:
        let it stop the command (or the run) instead of ending the session."""
        if not self._handle_sigint:
            yield
            return

        def on_sigint() -> None:
            if not self.interrupt() and not task.done():
                task.cancel()

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread/Windows
            yield
            return
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)

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
            self._invalidate()
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
        await self.conversation.aclose()
        await close_session(self.session)

    # -- the plain front-end ------------------------------------------------------------------

    async def run_lines(self, stream: IO[str]) -> int:
        """Read one question (or command) per line until EOF or ``exit``; print plain lines.

        Returns 0 when every run answered, 1 when one failed.
        """
        self.open_session()
        if self.problem:
            self.warn(self.problem)
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
            await self.conversation.aclose()
            await close_session(self.session)
        return 1 if failed else 0


def context_estimate(agent: Any, messages: Sequence[Message]) -> int:
    """Tokens the agent's next request would hold (tool definitions included, as in the
    closing line of a finished run)."""
    estimate = getattr(agent, "context_tokens", None)
    if callable(estimate):
        with contextlib.suppress(Exception):
            return int(estimate())
    return estimate_message_tokens(messages)


def _empty_buffer() -> Any:
    from prompt_toolkit.filters import Condition

    def empty() -> bool:
        app = get_app_or_none()
        return app is not None and not app.current_buffer.text

    return Condition(empty)


class ConsoleStream(io.TextIOBase):
    """A text stream that writes through a rich console (so it lands above the prompt)."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def write(self, text: str) -> int:
        """Write ``text`` as is (no markup, no highlighting)."""
        self._console.out(text, end="", highlight=False)
        return len(text)

    def writable(self) -> bool:
        return True


def shown_elsewhere(event: Event) -> bool:
    """Events the REPL shows itself: the question tool's row (its prompt and the
    ``Answered:`` block stand for it; its errors are still shown)."""
    return isinstance(event, ToolStart | ToolProgress | ToolEnd) and event.tool == ASK_TOOL


ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


def quiet_cancelled(previous: ExceptionHandler | None) -> ExceptionHandler:
    """A loop exception handler that drops "exception was never retrieved" reports for
    futures that were merely cancelled (an interrupt cancels gathers nobody awaits any
    more); everything else goes to ``previous`` or the default handler.

    The REPL owns its loop, so the handler stays for the loop's life.
    """

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), asyncio.CancelledError):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    return handle


def _apply_line(dialog: Dialog, answer: str) -> bool:
    """Turn a typed line into dialog keys (see ``Repl._line_dialog``).

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


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield

