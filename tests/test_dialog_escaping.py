"""What a dialog shows comes from outside (a command the model wrote after reading a page,
a diff of fetched text, the model's questions): its control characters are shown, never
sent to the terminal, while the decision is about the request as it was."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from dexter.agent.executor import ApprovalRequest
from dexter.permissions.base import PermissionDecision
from dexter.repl.dialog_app import Dialog
from dexter.repl.dialog_host import DialogHost

CLEAR = "\x1b[2J\x1b]0;owned\x07"


class _Owner:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def note(self, text: str) -> None:
        self.warnings.append(text)

    def print(self, *items: Any) -> None:
        self.printed = items

    def interrupt(self) -> bool:
        return False

    def live_view(self) -> None:
        return None


class _Host(DialogHost):
    """Shows nothing; records the dialog and answers with the first option."""

    def __init__(self) -> None:
        super().__init__(_Owner(), None, interactive=True)  # type: ignore[arg-type]
        self.dialogs: list[Dialog] = []

    async def show(self, dialog: Any) -> None:
        self.dialogs.append(dialog)
        dialog.handle("enter")


def _shown(dialog: Any) -> str:
    console = Console(width=100, record=True, force_terminal=False, color_system=None)
    console.print(dialog.render())
    return console.export_text()


async def test_an_approval_shows_control_characters_as_text() -> None:
    host = _Host()
    host.terminal = type("T", (), {"width": staticmethod(lambda: 100)})()  # type: ignore[assignment]
    request = ApprovalRequest("bash", {"command": f"echo hi{CLEAR}"},
                              PermissionDecision("ask", f"writes{CLEAR}"), "call_1",
                              preview=f"+ line{CLEAR}")
    choice = await host.approve(request)
    assert choice == "allow-once"
    text = _shown(host.dialogs[0])
    assert "\x1b" not in text and "\x07" not in text
    assert "echo hi\\x1b[2J" in text and "+ line\\x1b[2J" in text
    assert request.args["command"] == f"echo hi{CLEAR}"  # the request itself is unchanged


async def test_questions_show_control_characters_as_text() -> None:
    host = _Host()
    await host.request_user_input([{"question": f"Which{CLEAR}?", "options": [
        {"label": f"A{CLEAR}"}, {"label": "B"}]}])
    text = _shown(host.dialogs[0])
    assert "\x1b" not in text and "Which\\x1b[2J" in text
