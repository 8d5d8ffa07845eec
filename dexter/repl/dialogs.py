"""Inline prompts as small state machines: pick one option, approve a call, answer questions.

Each dialog is pure: ``handle(key, text)`` moves its state and sets ``done``/``result``;
``render()`` returns what to draw as rich renderables. ``dexter.repl.dialog_app`` runs one
in prompt-toolkit; tests drive them with key names directly. Keys: ``up``, ``down``,
``left``, ``right``, ``enter``, ``space``, ``escape``, ``abort`` (Ctrl-C), a digit
``"1"``..``"9"`` (or a whole number such as ``"12"``, typed as a line), and, while
``text_mode`` is on, ``text-enter``/``text-escape`` with the typed text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from dexter.agent.executor import PREVIEW_LINES, ApprovalRequest
from dexter.events import ApprovalChoice
from dexter.render.format import args_summary, one_line, tool_title, truncate

T = TypeVar("T")

PRIMARY = "#258bff"
MUTED = "#a6a6a6"
WARNING = "#ffcc00"
POINTER = "❯ "
ABORT = "abort"
"""The result of a dialog closed with Ctrl-C: the REPL also interrupts the run."""


@dataclass(frozen=True, slots=True)
class Option(Generic[T]):
    """A choice on screen: its label, the value it stands for, and an optional description."""

    label: str
    value: T
    description: str = ""


def hanging(prefix: Text, body: Text) -> Table:
    """``prefix`` then ``body``; wrapped lines of the body stay indented under its start."""
    grid = Table.grid(padding=0)
    grid.add_column(no_wrap=True, width=prefix.cell_len)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_row(prefix, body)
    return grid


def _option_lines(number: int, option: Option[Any], selected: bool,
                  mark: str = "") -> list[RenderableType]:
    head = Text(POINTER if selected else "  ", style=f"bold {PRIMARY}" if selected else "")
    head.append(f"{number}. ", style=PRIMARY if selected else MUTED)
    if mark:
        head.append(mark + " ", style=PRIMARY if mark == "◉" else MUTED)
    lines: list[RenderableType] = [
        hanging(head, Text(option.label, style=f"bold {PRIMARY}" if selected else ""))]
    if option.description:
        lines.append(hanging(Text(" " * head.cell_len), Text(option.description, style=MUTED)))
    return lines


class SelectDialog(Generic[T]):
    """Pick one option with arrows or a number; Esc gives ``escape_value``.

    ``text_option``: the index of an option that opens a text field instead (its result is
    ``text_value(typed)``); used for "type a model name".
    """

    def __init__(self, header: Sequence[RenderableType], options: Sequence[Option[T]], *,
                 escape_value: T | None, footer: str = "enter to confirm · esc to cancel",
                 text_option: int | None = None, text_prompt: str = "",
                 selected: int = 0) -> None:
        if not options:
            raise ValueError("a dialog needs at least one option")
        self.header = list(header)
        self.options = list(options)
        self.escape_value = escape_value
        self.footer = footer
        self.text_option = text_option
        self.text_prompt = text_prompt
        self.cursor = selected if 0 <= selected < len(self.options) else 0
        self.done = False
        self.text_mode = False
        self.result: T | str | None = None
        self._typed = ""

    def _finish(self, value: T | str | None) -> None:
        self.result, self.done = value, True

    def _choose(self, index: int) -> None:
        self.cursor = index
        if index == self.text_option:
            self.text_mode = True
            return
        self._finish(self.options[index].value)

    def pick(self, number: int) -> None:
        """Choose option ``number`` (1-based) at once; out of range does nothing."""
        if not self.done and not self.text_mode and 1 <= number <= len(self.options):
            self._choose(number - 1)

    def _digit(self, key: str) -> None:
        """Up to 9 options a digit picks at once; with more, typed digits move the cursor
        (``1`` then ``2`` reaches option 12) and enter confirms. A whole number picks."""
        count = len(self.options)
        if count <= 9 or len(key) > 1:
            self.pick(int(key))
            return
        typed = self._typed + key
        if not 1 <= int(typed) <= count:
            typed = key
        if 1 <= int(typed) <= count:
            self.cursor, self._typed = int(typed) - 1, typed
        else:
            self._typed = ""

    def handle(self, key: str, text: str = "") -> None:
        """Apply one key."""
        if self.done:
            return
        typed, self._typed = self._typed, ""
        if key == "abort":
            self._finish(ABORT)
        elif self.text_mode:
            if key == "text-enter" and text.strip():
                self._finish(text.strip())
            elif key == "text-escape":
                self.text_mode = False
        elif key.isdigit():
            self._typed = typed
            self._digit(key)
        elif key in ("up", "left"):
            self.cursor = (self.cursor - 1) % len(self.options)
        elif key in ("down", "right"):
            self.cursor = (self.cursor + 1) % len(self.options)
        elif key in ("enter", "space"):
            self._choose(self.cursor)
        elif key == "escape":
            self._finish(self.escape_value)

    def render(self) -> RenderableType:
        """The dialog as it looks now."""
        lines: list[RenderableType] = [*self.header]
        for n, option in enumerate(self.options, 1):
            lines.extend(_option_lines(n, option, n - 1 == self.cursor))
        if self.text_mode:
            lines.append(Text(self.text_prompt or "Type it and press enter (esc to go back):",
                              style=MUTED))
        else:
            lines.append(Text(self.footer, style=MUTED))
        return Group(*lines)


# -- approvals ----------------------------------------------------------------------------


def approval_target(request: ApprovalRequest) -> str:
    """What the call touches: the shell command, the path, the URL, else its arguments."""
    args = request.args
    for key in ("command", "path", "file_path", "url"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return args_summary(args)


def session_label(request: ApprovalRequest) -> str:
    """The wording of "allow for this session" for this kind of grant."""
    key = request.decision.session_key
    if key == "file:write":
        return "Yes, allow all file edits this session"
    if key.startswith("bash:"):
        return "Yes, and don't ask again for this command during this question"
    return f"Yes, allow {tool_title(request.tool)} for this session"


def approval_options(request: ApprovalRequest) -> list[Option[ApprovalChoice]]:
    """Allow once; for this session (when it can be cached); always (when a rule is
    proposed, showing the rule); deny."""
    decision = request.decision
    options: list[Option[ApprovalChoice]] = [Option("Yes", "allow-once")]
    if decision.cacheable:
        options.append(Option(session_label(request), "allow-session"))
    if decision.proposed_rule:
        options.append(Option(f"Yes, and always allow {decision.proposed_rule}", "allow-always",
                              "saved to settings.json; applies to future sessions"))
    options.append(Option("No", "deny"))
    return options


def approval_header(request: ApprovalRequest, width: int = 80) -> list[RenderableType]:
    """Border, title, the call's headline, the engine's reason, the question."""
    headline = Text(tool_title(request.tool), style="bold")
    target = approval_target(request)
    if target:
        headline.append("  " + truncate(target, max(20, width * 3 - 10)))
    lines: list[RenderableType] = [
        Rule(style=WARNING),
        Text("Permission required", style=f"bold {WARNING}"),
        headline,
    ]
    reason = one_line(request.decision.reason)
    if reason:
        lines.append(Text(reason, style=MUTED))
    grants = request.decision.grants
    if grants:
        lines.append(Text(f"Approving gives this command, inside the sandbox: {grants.describe()}.",
                          style=MUTED))
    if request.decision.warning:
        lines.append(Text("⚠ " + one_line(request.decision.warning), style=f"bold {WARNING}"))
    if request.preview:
        lines.extend(preview_lines(request.preview, request.preview_path))
    lines.append(Text("Do you want to allow this?"))
    return lines


_DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def preview_lines(preview: str, saved: str = "", limit: int = PREVIEW_LINES) -> list[Text]:
    """The change an approval would allow: its first ``limit`` lines (a diff coloured by
    line kind), then how many more there are and where the whole change is saved."""
    rows = preview.splitlines()
    out = []
    for row in rows[:limit]:
        style = next((s for prefix, s in _DIFF_STYLES if row.startswith(prefix)), "")
        out.append(Text(row, style=style, no_wrap=True, overflow="ellipsis"))
    if len(rows) > limit:
        more = f"… {len(rows) - limit:,} more lines"
        out.append(Text(f"{more} · the whole change: {saved}" if saved else more, style=MUTED))
    return out


class ApprovalDialog(SelectDialog[ApprovalChoice]):
    """Allow once / for this session / always / deny. Esc denies; Ctrl-C aborts the run."""

    def __init__(self, request: ApprovalRequest, width: int = 80) -> None:
        super().__init__(approval_header(request, width), approval_options(request),
                         escape_value="deny", footer="enter to confirm · esc to deny")
        self.request = request

    def render(self) -> RenderableType:
        """The prompt between two warning-coloured rules."""
        return Group(super().render(), Rule(style=WARNING))

    @property
    def choice(self) -> ApprovalChoice:
        """The decision (Ctrl-C and anything unexpected deny)."""
        value = self.result
        if value in ("allow-once", "allow-session", "allow-always"):
            return value
        return "deny"


# -- ask_user_question --------------------------------------------------------------------

OTHER_LABEL = "Other (type your own answer)"


class QuestionError(ValueError):
    """The questions the model sent cannot be shown; the message says what was wrong."""


@dataclass
class _Question:
    question: str
    header: str
    multi: bool
    options: list[Option[str]]
    cursor: int = 0
    picked: set[int] = field(default_factory=set)
    other_text: str = ""
    answered: bool = False

    @property
    def other_index(self) -> int:
        return len(self.options)

    def labels(self) -> list[str]:
        return [self.options[i].label for i in sorted(self.picked) if i < len(self.options)]


def _parse_questions(raw: Sequence[dict[str, Any]]) -> list[_Question]:
    if not raw:
        raise QuestionError("ask_user_question needs at least one question.")
    out = []
    for n, item in enumerate(raw, 1):
        question = str(item.get("question", "")).strip()
        if not question:
            raise QuestionError(f"Question {n} has no text.")
        options = [
            Option(str(o.get("label", "")).strip(), str(o.get("label", "")).strip(),
                   str(o.get("description", "") or "").strip())
            for o in item.get("options", []) if isinstance(o, dict) and str(o.get("label", "")).strip()
        ]
        out.append(_Question(question, str(item.get("header", "") or f"Q{n}").strip(),
                             bool(item.get("multi_select", False)), options))
    return out


class QuestionDialog:
    """One or more questions, each single- or multi-select, with an "Other" free-text answer.

    Single-select: a number or Enter picks and moves on. Multi-select: Space or a number
    toggles, Enter confirms. ←/→ switch questions; Esc declines all; Ctrl-C aborts the run.
    The dialog finishes once every question is answered.
    """

    def __init__(self, questions: Sequence[dict[str, Any]]) -> None:
        self.questions = _parse_questions(questions)
        self.index = 0
        self.done = False
        self.text_mode = False
        self.result: dict[str, Any] | None = None
        self.aborted = False

    @property
    def current(self) -> _Question:
        return self.questions[self.index]

    def _count(self) -> int:
        return len(self.current.options) + 1

    def handle(self, key: str, text: str = "") -> None:
        """Apply one key."""
        if self.done:
            return
        if key == "abort":
            self.aborted, self.done = True, True
            return
        if self.text_mode:
            self._text_key(key, text)
            return
        q = self.current
        if key == "up":
            q.cursor = (q.cursor - 1) % self._count()
        elif key == "down":
            q.cursor = (q.cursor + 1) % self._count()
        elif key == "left":
            self.index = (self.index - 1) % len(self.questions)
        elif key == "right":
            self.index = (self.index + 1) % len(self.questions)
        elif key == "escape":
            self.result, self.done = {"answers": [], "declined": True}, True
        elif key == "space":
            self._toggle_or_pick(q.cursor)
        elif key == "enter":
            self._confirm(q)
        elif key.isdigit() and 1 <= int(key) <= self._count():
            self._toggle_or_pick(int(key) - 1)

    def _text_key(self, key: str, text: str) -> None:
        q = self.current
        if key == "text-escape":
            self.text_mode = False
        elif key == "text-enter" and text.strip():
            q.other_text = text.strip()
            self.text_mode = False
            if not q.multi:  # multi-select: more may be toggled; enter confirms
                q.picked.clear()
                self._mark_answered(q)

    def _toggle_or_pick(self, index: int) -> None:
        q = self.current
        q.cursor = index
        if index == q.other_index:
            self.text_mode = True
            return
        if q.multi:
            q.picked ^= {index}
            return
        q.picked, q.other_text = {index}, ""
        self._mark_answered(q)

    def _confirm(self, q: _Question) -> None:
        if not q.multi or (not q.picked and not q.other_text):
            self._toggle_or_pick(q.cursor)
            if q.multi and not self.text_mode:
                self._mark_answered(q)
            return
        self._mark_answered(q)

    def _mark_answered(self, q: _Question) -> None:
        q.answered = True
        pending = [i for i, other in enumerate(self.questions) if not other.answered]
        if not pending:
            self._finish()
            return
        after = [i for i in pending if i > self.index]
        self.index = after[0] if after else pending[0]

    def _finish(self) -> None:
        answers = []
        for q in self.questions:
            entry: dict[str, Any] = {"header": q.header, "question": q.question,
                                     "selected": q.labels()}
            if q.other_text:
                entry["other_text"] = q.other_text
            answers.append(entry)
        self.result, self.done = {"answers": answers, "declined": False}, True

    def render(self) -> RenderableType:
        """The tab strip (several questions), the question, its options, the key hints."""
        lines: list[RenderableType] = []
        if len(self.questions) > 1:
            strip = Text()
            for i, q in enumerate(self.questions):
                box = "☑" if q.answered else "☐"
                style = f"bold reverse {PRIMARY}" if i == self.index else MUTED
                strip.append(f" {box} {q.header} ", style=style)
                strip.append(" ")
            lines.append(strip)
        q = self.current
        lines.append(Text(q.question, style="bold"))
        for i, option in enumerate([*q.options, Option(OTHER_LABEL, "")]):
            mark = ("◉" if (i in q.picked or (i == q.other_index and q.other_text)) else "◯") \
                if q.multi else ""
            lines.extend(_option_lines(i + 1, option, i == q.cursor, mark))
            if i == q.other_index and q.other_text and not self.text_mode:
                lines.append(Text(f"     “{q.other_text}”", style=MUTED))
        if self.text_mode:
            lines.append(Text("Type your answer and press enter (esc to go back):", style=MUTED))
        else:
            hint = "space to toggle · enter to confirm" if q.multi else "enter to select"
            more = " · ←/→ questions" if len(self.questions) > 1 else ""
            lines.append(Text(f"↑/↓ to move · {hint}{more} · esc to skip", style=MUTED))
        return Group(*lines)


def answered_lines(result: dict[str, Any]) -> list[Text]:
    """What stays on screen after the questions: ``Answered:`` and ``question → picks``."""
    lines = [Text("⏺ ", style="#00cc00") + Text("Answered:")]
    for answer in result.get("answers", []):
        picks = list(answer.get("selected", []))
        if answer.get("other_text"):
            picks.append(f"Other: {answer['other_text']}")
        lines.append(Text("  ⎿  ", style=MUTED) + Text(
            f"{answer.get('question', '')} → {', '.join(picks) or '(nothing)'}"))
    return lines
