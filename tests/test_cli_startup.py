"""``dexter --version`` and ``--help`` start fast: they never import the SDKs or the loop."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("openai", "anthropic", "httpx", "httpx2", "tiktoken", "prompt_toolkit", "rich.live",
         "dexter.agent.loop", "dexter.providers.openai_chat", "dexter.providers.anthropic_messages")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["ask", "--help"], ["replay", "--help"]])
def test_help_and_version_import_no_sdk(args: list[str]) -> None:
    code = (
        "import sys\n"
        "from dexter.cli.app import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()  # the version or the help text was printed
    assert "HEAVY=\n" in proc.stderr, proc.stderr
