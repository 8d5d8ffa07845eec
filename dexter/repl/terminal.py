"""The REPL's terminal: the prompt-toolkit prompt, its keys, the bottom toolbar, signals.

:class:`Terminal` owns the one prompt the session keeps open. It is the only painter of
the changing part of the screen: the running tool rows (the live renderer's region,
rendered by rich to ANSI text) are part of the prompt's message above the input line,
and :meth:`Terminal.tick` invalidates the prompt at a steady frame rate while a run works.
What the keys and the toolbar act on (interrupting, quitting, the model and token count)
comes from a :class:`TerminalOwner`, the REPL.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import signal
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.completion import Completer
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style
from rich.console import Console

from dexter.filelock import append_locked
from dexter.render.live import LiveRenderer
from dexter.repl.dialog_app import ESCAPE_DELAY_S
from dexter.repl.view import ToolbarState, render_ansi, toolbar_text
from dexter.secrets import scrub

WAKE = "\x00wake"
"""A prompt result that is not input: the prompt was closed to show a dialog or to quit."""
DOUBLE_PRESS_S = 2.0
FRAME_S = 1 / 12

_STYLE = Style.from_dict({
    "bottom-toolbar": "noreverse #a6a6a6",
    "bottom-toolbar.text": "noreverse",
})
_HINTS = {"ctrl-c": "press ctrl+c again to exit", "escape": "esc again to clear"}


class TerminalOwner(Protocol):
    """What the terminal's keys, toolbar and prompt message need from the REPL."""

    quitting: bool

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""

    def interrupt(self) -> bool:
        """Cancel the current run; returns whether there was one."""

    def request_quit(self) -> None:
        """Leave the session."""

    def note(self, text: str) -> None:
        """A muted one-line note."""

    def live_view(self) -> LiveRenderer | None:
        """The current run's live renderer, if one is drawing."""

    def toolbar_state(self, hint: str) -> ToolbarState:
        """What the bottom toolbar shows, with ``hint`` in place of the usual one."""

    def dialogs_waiting(self) -> bool:
        """Whether a dialog waits for the prompt to make room."""


@contextlib.contextmanager
def typed_lines_unechoed() -> Iterator[None]:
    """On a dumb terminal, keep the terminal from echoing what is typed while no prompt is
    open (during a run, or before the prompt takes the terminal): the prompt echoes the line
    itself when it reads it, so a line typed ahead would otherwise show twice. The
    terminal's settings are put back on the way out, however the REPL ends."""
    fd = sys.stdin.fileno() if sys.stdin is not None else -1
    try:
        saved = termios.tcgetattr(fd)
    except (termios.error, OSError, ValueError):
        yield
        return
    quiet = [*saved[:3], saved[3] & ~termios.ECHO, *saved[4:]]
    termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class ScrubbedFileHistory(FileHistory):
    """The input history file, without any secret value the user pasted."""

    filename: str

    def store_string(self, string: str) -> None:
        """Append the entry in prompt-toolkit's file format, as one locked write, so two
        REPLs sharing the file never interleave their lines."""
        lines = "".join(f"+{line}\n" for line in scrub(string).split("\n"))
        entry = f"\n# {datetime.datetime.now()}\n{lines}"
        with contextlib.suppress(OSError):  # an unwritable history loses only history
            append_locked(Path(self.filename), entry.encode("utf-8", errors="replace"))


class Terminal:
    """The prompt of one REPL on a terminal (full, or dumb: ``fancy=False``)."""

    def __init__(
        self,
        owner: TerminalOwner,
        console: Console,
        *,
        fancy: bool,
        color: bool,
        history_path: Path,
        clock: Callable[[], float],
        use_patch_stdout: bool = False,
        handle_sigint: bool = False,
    ) -> None:
        self.owner = owner
        self.console = console
        self.fancy = fancy
        self.color = color
        self.prompt: PromptSession[str] | None = None
        self.stash = ""
        """Text for the next prompt to start with (typed before it closed, or queued)."""
        self._history_path = history_path
        self._clock = clock
        self._use_patch_stdout = use_patch_stdout
        self._handle_sigint = handle_sigint
        self._armed: tuple[str, float] | None = None

    # -- the screen ---------------------------------------------------------------------------

    def width(self) -> int:
        """Columns to render into (one less than the terminal's, at least 20)."""
        app = get_app_or_none()
        if app is not None:
            with contextlib.suppress(Exception):
                return max(20, app.output.get_size().columns - 1)
        return max(20, self.console.width - 1)

    def invalidate(self) -> None:
        """Redraw the prompt (its live region and toolbar) soon."""
        prompt = self.prompt
        if prompt is not None and prompt.app.is_running:
            prompt.app.invalidate()

    async def tick(self) -> None:
        """Redraw at a steady frame rate until cancelled (never per chunk)."""
        while True:
            await asyncio.sleep(FRAME_S)
            self.invalidate()

    def wake_prompt(self) -> None:
        """Close the running prompt (keeping what was typed) so the input loop looks again."""
        prompt = self.prompt
        if prompt is None:
            return
        app = prompt.app
        if app.is_running and app.future is not None and not app.future.done():
            typed = prompt.default_buffer.text
            if typed and not self.stash:
                self.stash = typed
            app.exit(result=WAKE)

    def message(self) -> AnyFormattedText:
        """The prompt's message: the live region during a run, then ``❯``."""
        renderer = self.owner.live_view()
        prompt = "\x1b[1m❯\x1b[0m " if self.color else "❯ "
        if self.fancy and renderer is not None and renderer.running:
            region = render_ansi(renderer.live_region(), self.width(), self.color)
            if region.strip():
                return ANSI(region.rstrip("\n") + "\n" + prompt)
        return ANSI(prompt)

    def toolbar(self) -> str:
        """The bottom toolbar's text."""
        hint = ""
        if self._armed is not None and self._clock() - self._armed[1] <= DOUBLE_PRESS_S:
            hint = _HINTS[self._armed[0]]
        return toolbar_text(self.owner.toolbar_state(hint), self.width())

    # -- the prompt ---------------------------------------------------------------------------

    def patched_stdout(self) -> contextlib.AbstractContextManager[None]:
        """Print above the prompt while it is open (when the terminal can redraw it)."""
        return patch_stdout(raw=True) if self._use_patch_stdout else contextlib.nullcontext()

    def open(self, completer: Completer) -> None:
        """Make the prompt the session reads from."""
        self.prompt = PromptSession(
            history=self._input_history(),
            completer=completer,
            complete_while_typing=True,
            multiline=True,
            key_bindings=self._key_bindings(),
            bottom_toolbar=self.toolbar if self.fancy else None,
            erase_when_done=True,
            prompt_continuation="  ",
            style=_STYLE,
            include_default_pygments_style=False,
        )
        app = self.prompt.app
        app.ttimeoutlen = ESCAPE_DELAY_S
        app.timeoutlen = ESCAPE_DELAY_S * 3

    async def read(self) -> str | None:
        """The next input; None when the prompt closed without one (a dialog, Ctrl-C).

        Raises ``EOFError`` when the input ended.
        """
        assert self.prompt is not None, "open() the terminal first"
        default, self.stash = self.stash, ""
        try:
            text = await self.prompt.prompt_async(self.message, default=default,
                                                  pre_run=self._pre_run)
        except KeyboardInterrupt:
            return None
        return None if text == WAKE else text

    def _pre_run(self) -> None:
        if self.owner.dialogs_waiting() or self.owner.quitting:
            self.wake_prompt()

    def _input_history(self) -> History:
        path = self._history_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=True)
        except OSError as exc:
            self.owner.note(f"Input history is not saved ({path}: {exc.strerror}).")
            return InMemoryHistory()
        return ScrubbedFileHistory(str(path))

    # -- keys and signals ---------------------------------------------------------------------

    def _pressed_twice(self, key: str) -> bool:
        now = self._clock()
        armed = self._armed
        if armed is not None and armed[0] == key and now - armed[1] <= DOUBLE_PRESS_S:
            self._armed = None
            return True
        self._armed = (key, now)
        return False

    def _key_bindings(self) -> KeyBindings:
        kb = KeyBindings()
        owner = self.owner

        @kb.add("enter")
        def _send(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
                return
            buffer.validate_and_handle()

        @kb.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("c-j")
        def _ctrl_j(event: KeyPressEvent) -> None:
            # A line typed while no prompt was open (a dumb terminal during a run, or
            # before the first prompt) reached the terminal in cooked mode, which turned its
            # Enter into a line feed: on a dumb terminal, where a second line cannot be
            # edited anyway, it sends the line; on a full one it starts a new line.
            if self.fancy:
                event.current_buffer.insert_text("\n")
            else:
                event.current_buffer.validate_and_handle()

        @kb.add("escape")
        def _escape(event: KeyPressEvent) -> None:
            if owner.interrupt():
                return
            buffer = event.current_buffer
            if buffer.complete_state is not None:
                buffer.cancel_completion()
            elif buffer.text and self._pressed_twice("escape"):
                buffer.reset()

        @kb.add("c-c", eager=True)
        def _ctrl_c(event: KeyPressEvent) -> None:
            if owner.interrupt():
                return
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
            elif self._pressed_twice("ctrl-c"):
                owner.request_quit()

        @kb.add("c-d", filter=_empty_buffer())
        def _ctrl_d(_event: KeyPressEvent) -> None:
            owner.request_quit()

        return kb

    @contextlib.contextmanager
    def sigint_cancels(self, task: asyncio.Task[None]) -> Iterator[None]:
        """While a command works the terminal is not in raw mode, so Ctrl-C is a signal:
        let it stop the command (or the run) instead of ending the session."""
        if not self._handle_sigint:
            yield
            return

        def on_sigint() -> None:
            if not self.owner.interrupt() and not task.done():
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


def _empty_buffer() -> Condition:
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
