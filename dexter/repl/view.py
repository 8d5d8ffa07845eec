"""What the REPL itself prints: the intro, help, /context, /cost, /history and the toolbar.

Every function returns a rich renderable (or plain text for the toolbar), so tests can
render them on a recorded console at any width.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from dexter.agent.conversation import SUMMARY_UNAVAILABLE, Turn, shorten
from dexter.render.format import format_tokens, plural
from dexter.repl.commands import Command
from dexter.repl.context_report import ContextReport
from dexter.repl.cost import CostTracker, format_cost

PRIMARY = "#258bff"
MUTED = "#a6a6a6"
WARNING = "#ffcc00"
ERROR = "#ff3333"

KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send"),
    ("alt+enter, ctrl+j", "new line"),
    ("tab", "complete commands, model names, file paths"),
    ("↑ / ↓", "input history"),
    ("esc, ctrl+c", "interrupt a run"),
    ("ctrl+c twice, ctrl+d", "quit (also exit, quit, /exit)"),
)


def render_ansi(renderable: RenderableType, width: int, color: bool = True) -> str:
    """``renderable`` as text with colour escape codes (none when ``color`` is false)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=max(10, width), force_terminal=color,
                      color_system="truecolor" if color else None, highlight=False,
                      no_color=not color, legacy_windows=False)
    console.print(renderable, end="")
    return buffer.getvalue()


@dataclass(frozen=True, slots=True)
class IntroInfo:
    """What the intro shows."""

    version: str
    model: str
    model_display: str
    provider: str
    home: str
    scratchpads: str
    problem: str = ""
    """Why no model can run (a missing key), with how to fix it."""
    interrupt_key: str = "esc"
    """The key that interrupts a run (``ctrl+c`` on a dumb terminal, where esc cannot)."""


def intro(info: IntroInfo) -> RenderableType:
    """The welcome block: version, model and provider, where state lives, first hints."""
    title = Text("dexter", style=f"bold {PRIMARY}")
    title.append(f" v{info.version}", style=MUTED)
    title.append("  ·  deep financial research in your terminal")
    model = Text("Model  ", style=MUTED)
    model.append(info.model_display, style=f"bold {PRIMARY}")
    if info.model_display != info.model:
        model.append(f" ({info.model})", style=MUTED)
    if info.provider:
        model.append(f" · {info.provider}", style=MUTED)
    lines: list[RenderableType] = [
        title,
        model,
        Text("State  ", style=MUTED) + Text(info.home),
        Text("Runs   ", style=MUTED) + Text(info.scratchpads),
    ]
    if info.problem:
        lines.append(Text())
        lines.append(Text(info.problem, style=WARNING))
    lines.append(Text())
    lines.append(Text(f"/help for commands · {info.interrupt_key} to interrupt · ctrl+d to quit",
                      style=MUTED))
    return Group(*lines)


def key_problem(message: str, env_var: str | None, *, interactive: bool = True) -> str:
    """Guidance for a model that cannot run: the problem, how to set the key, and how to
    switch model (``/model`` in a session; ``--model`` for piped input, which is not read)."""
    if not env_var:
        if not interactive:
            return f"{message}\nFix the configuration (or pick a model with --model) and run again."
        return f"{message}\nSwitch with /model, or fix the configuration and restart."
    from dexter.frontend import without_a_key

    hint = without_a_key()
    switch = ("then restart dexter, or pick a provider whose key is set with /model."
              if interactive else
              "then run dexter again, or pick a provider whose key is set with --model.")
    return (
        f"No API key: {env_var} is not set.\n"
        f"Add this line to a .env file in this folder (or export it in your shell):\n"
        f"  {env_var}=your-key-here\n"
        + switch + (f"\n{hint}" if hint else "")
    )


def help_view(commands: Iterable[Command]) -> RenderableType:
    """Commands with their help, then the keys."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style=PRIMARY)
    table.add_column(ratio=1)
    for command in commands:
        usage = f"/{command.name}" + (f" {command.usage}" if command.usage else "")
        table.add_row(usage, command.help)
    keys = Table.grid(padding=(0, 2))
    keys.add_column(no_wrap=True, style=PRIMARY)
    keys.add_column(ratio=1)
    for key, meaning in KEYS:
        keys.add_row(key, meaning)
    return Group(Text("Commands", style="bold"), table, Text(), Text("Keys", style="bold"), keys,
                 Text(), Text("Typing while dexter works queues your message for the run.",
                              style=MUTED))


def context_view(report: ContextReport, *, model: str, source: str) -> RenderableType:
    """``/context``: tokens in use against the threshold, and what would happen next."""
    bar_width = 30
    filled = min(bar_width, round(bar_width * report.percent / 100))
    bar = Text("█" * filled, style=WARNING if report.percent > 100 else PRIMARY)
    bar.append("░" * (bar_width - filled), style=MUTED)
    lines: list[RenderableType] = [
        Text(f"Context for {model}", style="bold"),
        bar + Text(f" {report.percent}%"),
        Text(f"{report.tokens:,} tokens in use ({source}) · threshold {report.threshold:,}"
             f" · window {report.window:,}"),
        Text("Next stage: ", style=MUTED) + Text(report.action, style="bold"),
        Text(report.detail, style=MUTED),
    ]
    return Group(*lines)


def cost_view(tracker: CostTracker, model: str, price_known: bool) -> RenderableType:
    """``/cost``: this session's runs, tokens in/out and the estimated cost."""
    if tracker.runs == 0:
        return Text("No runs yet in this session.", style=MUTED)
    lines: list[RenderableType] = [
        Text(f"{plural(tracker.runs, 'run')} · {format_tokens(tracker.input_tokens)} in / "
             f"{format_tokens(tracker.output_tokens)} out"
             f" ({tracker.input_tokens:,} / {tracker.output_tokens:,} tokens)"),
    ]
    if tracker.unpriced_models:
        names = ", ".join(sorted(tracker.unpriced_models))
        known = f"~{format_cost(tracker.cost)} for the priced runs; " if tracker.cost else ""
        lines.append(Text(f"Estimated cost: {known}no price known for {names}.", style=MUTED))
    else:
        lines.append(Text("Estimated cost: ", style=MUTED) + Text(f"~{format_cost(tracker.cost)}",
                                                                   style="bold"))
    if not price_known:
        lines.append(Text(f"The catalog has no price for {model}.", style=MUTED))
    return Group(*lines)


def history_view(turns: Sequence[Turn], summary: str | None) -> RenderableType:
    """``/history``: the session's questions with a short answer each."""
    if not turns and not summary:
        return Text("No conversation yet in this session.", style=MUTED)
    lines: list[RenderableType] = []
    if summary:
        lines.append(Text("Earlier turns were compacted into a summary.", style=MUTED))
    for n, turn in enumerate(turns, 1):
        lines.append(Text(f"{n}. ", style=PRIMARY) + Text(shorten(turn.query, 120), style="bold"))
        if turn.status == "ok":
            answer = turn.summary or shorten(" ".join(turn.answer.split()), 160) or "(no answer)"
            note = f"  {SUMMARY_UNAVAILABLE}" if turn.summary_failed else ""
            lines.append(Text("   " + answer + note, style=MUTED))
        else:
            lines.append(Text(f"   ({turn.status})", style=WARNING))
    return Group(*lines)


@dataclass(frozen=True, slots=True)
class ToolbarState:
    """What the bottom toolbar shows."""

    model: str
    tokens: int
    threshold: int
    busy: bool
    queued: int
    hint: str = ""


IDLE_HINT = "/ for commands · alt+enter for a new line"


def toolbar_text(state: ToolbarState, width: int = 200) -> str:
    """`` gpt-4.1 · 12k/95k tokens · esc to interrupt · 2 messages queued``.

    In a narrow window the idle hint goes first, then the token count.
    """
    tokens = (f"{format_tokens(state.tokens)}/{format_tokens(state.threshold)} tokens"
              if state.threshold > 0 else "")
    hint = state.hint or ("esc to interrupt" if state.busy else IDLE_HINT)
    queued = f"{plural(state.queued, 'message')} queued" if state.queued else ""
    for dropped in ((), (IDLE_HINT,), (IDLE_HINT, tokens)):
        parts = [p for p in (state.model, tokens, hint, queued) if p and p not in dropped]
        text = " " + " · ".join(parts)
        if len(text) <= width:
            break
    return text
