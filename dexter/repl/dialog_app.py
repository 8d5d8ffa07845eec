"""Runs a dialog (``dexter.repl.dialogs``) inline in the terminal with prompt-toolkit.

The dialog is drawn below the scrollback, in place of the prompt, and erased when it
closes; only what the caller prints afterwards stays. Keys are translated to the
dialog's key names; a one-line text field appears while the dialog is in ``text_mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from rich.console import RenderableType

from dexter.repl.view import render_ansi

ESCAPE_DELAY_S = 0.05
"""How long a lone Esc waits for the rest of an escape sequence (terminal keys arrive together)."""


class Dialog(Protocol):
    """What the runner needs from a dialog."""

    done: bool
    text_mode: bool

    def handle(self, key: str, text: str = "") -> None: ...

    def render(self) -> RenderableType: ...


async def run_dialog(dialog: Dialog, *, color: bool = True,
                     on_open: Callable[[Callable[[], None]], None] | None = None) -> None:
    """Show ``dialog`` until it is done (its ``result`` holds the outcome).

    ``on_open`` receives a function that closes the dialog as if Ctrl-C was pressed (the
    REPL uses it when the run that asked is interrupted).
    """
    field = Buffer(multiline=False)
    selecting = Condition(lambda: not dialog.text_mode)
    typing = Condition(lambda: dialog.text_mode)
    app: Application[None]

    def width() -> int:
        return max(20, app.output.get_size().columns - 1)

    body = Window(FormattedTextControl(lambda: ANSI(render_ansi(dialog.render(), width(), color)),
                                       focusable=True, show_cursor=False),
                  dont_extend_height=True)
    text_window = Window(BufferControl(field), height=1,
                         get_line_prefix=lambda _line, _wrap: "  › ")
    kb = KeyBindings()

    def press(key: str, text: str = "") -> None:
        was_typing = dialog.text_mode
        dialog.handle(key, text)
        if dialog.done:
            _exit(app)
            return
        if dialog.text_mode and not was_typing:
            field.reset()
            app.layout.focus(text_window)
        elif was_typing and not dialog.text_mode:
            app.layout.focus(body)

    def bind(keys: tuple[str, ...], name: str, when: Condition) -> None:
        for key in keys:
            @kb.add(key, filter=when, eager=True)
            def _(_event: KeyPressEvent, name: str = name) -> None:
                press(name)

    bind(("up", "k", "s-tab"), "up", selecting)
    bind(("down", "j", "tab"), "down", selecting)
    bind(("left",), "left", selecting)
    bind(("right",), "right", selecting)
    bind(("enter",), "enter", selecting)
    bind(("space",), "space", selecting)
    bind(("escape",), "escape", selecting)
    for digit in "0123456789":
        bind((digit,), digit, selecting)

    @kb.add("c-c", eager=True)
    def _abort(_event: KeyPressEvent) -> None:
        press("abort")

    @kb.add("enter", filter=typing, eager=True)
    def _text_enter(_event: KeyPressEvent) -> None:
        press("text-enter", field.text)

    @kb.add("escape", filter=typing, eager=True)
    def _text_escape(_event: KeyPressEvent) -> None:
        press("text-escape")

    layout = Layout(HSplit([body, ConditionalContainer(text_window, filter=typing)]),
                    focused_element=body)
    app = Application(layout=layout, key_bindings=kb, full_screen=False, erase_when_done=True,
                      mouse_support=False)
    app.ttimeoutlen = ESCAPE_DELAY_S
    app.timeoutlen = ESCAPE_DELAY_S
    if dialog.text_mode:
        app.layout.focus(text_window)
    if on_open is not None:
        on_open(lambda: press("abort"))
    await app.run_async(pre_run=lambda: _exit(app) if dialog.done else None)


def _exit(app: Application[None]) -> None:
    """End ``app`` if it is running and not already ending."""
    if app.future is not None and not app.future.done():
        app.exit()
