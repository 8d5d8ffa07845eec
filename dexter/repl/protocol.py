"""What the REPL's parts need from the REPL, as protocols.

The slash commands (:mod:`dexter.repl.handlers`) are typed against :class:`ReplLike`, not
against :class:`dexter.repl.app.Repl`, so the handlers do not import the application that
runs them, and a test can hand them anything with these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from dexter.agent.conversation import Conversation
    from dexter.agent.factory import Session
    from dexter.agent.loop import Agent
    from dexter.agent.queue import MessageQueue
    from dexter.config import Settings
    from dexter.messages import Message
    from dexter.repl.commands import CommandRegistry
    from dexter.repl.cost import CostTracker
    from dexter.repl.dialog_app import Dialog
    from dexter.reports import Report


class Output(Protocol):
    """Where finished lines go: above the prompt, into the scrollback."""

    def print(self, *items: RenderableType | str, style: str = "") -> None:
        """Print renderables (a string is printed as text in ``style``)."""

    def note(self, text: str) -> None:
        """A muted one-line note."""

    def warn(self, text: str) -> None:
        """A warning line."""

    def error(self, text: str) -> None:
        """An error line."""


class ReplLike(Output, Protocol):
    """Everything a slash command handler uses of the REPL, and nothing more."""

    context_tokens: int
    """Estimated tokens of the next request (the toolbar shows it)."""

    @property
    def settings(self) -> Settings:
        """The session's settings (a command may change them, then ``rebuild``)."""

    @property
    def console(self) -> Console:
        """The console output goes to."""

    @property
    def fancy(self) -> bool:
        """Whether the terminal is a full one (not a dumb terminal or a pipe)."""

    @property
    def registry(self) -> CommandRegistry:
        """The slash commands."""

    @property
    def conversation(self) -> Conversation:
        """The session's turns."""

    @property
    def queue(self) -> MessageQueue:
        """Follow-ups typed during a run."""

    @property
    def costs(self) -> CostTracker:
        """The session's tokens and cost."""

    @property
    def session(self) -> Session | None:
        """The agent session, or None when no model can run."""

    @property
    def agent(self) -> Agent | None:
        """The current agent, or None when no model can run."""

    @property
    def problem(self) -> str:
        """Why no model can run (with guidance), or empty."""

    @property
    def last_report(self) -> Report | None:
        """The report of the last answered question, or None (none yet, or after /clear)."""

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""

    def model_label(self) -> str:
        """The model name for views."""

    def next_request_view(self) -> list[Message]:
        """What the next question's request starts with."""

    def tool_specs_tokens(self) -> int:
        """Estimated tokens of the tool definitions."""

    def estimate_next_request(self) -> int:
        """Estimated tokens of the next request before its question."""

    async def rebuild(self) -> bool:
        """Rebuild the agent after a settings change; returns whether a model can run."""

    async def show_dialog(self, dialog: Dialog) -> None:
        """Show a dialog until it is done."""

    def request_quit(self) -> None:
        """Leave the session."""

    def new_session(self) -> None:
        """Go on in a new saved session (the old one stays resumable)."""
