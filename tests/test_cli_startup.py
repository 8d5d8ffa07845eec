"""``dexter --version`` and ``--help`` start fast: they never import the SDKs or the loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.testing.fakellm import FakeLLM, Reply
from tests.cli_helpers import cli_env

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


# Modules a plain ``dexter ask`` never needs before (or for) its first request: the other
# provider's SDK, and what only a tool call, an MCP server or memory search uses.
ASK_UNUSED = ("mcp", "trafilatura", "bs4", "lxml", "httpx", "ddgs", "pypdf", "tiktoken",
              "numpy", "prompt_toolkit", "dexter.tools.mcp", "dexter.repl")


@pytest.mark.parametrize(("model", "sdk", "other"), [("gpt-5-mini", "openai", "anthropic"),
                                                     ("claude-sonnet-4-6", "anthropic", "openai")])
def test_ask_imports_only_the_sdk_it_uses(tmp_path: Path, model: str, sdk: str, other: str) -> None:
    """A one-request ``dexter ask`` imports its provider's SDK and nothing it does not use."""
    code = (
        "import atexit, sys\n"
        f"names = {(*ASK_UNUSED, sdk, other)!r}\n"
        "atexit.register(lambda: print('LOADED=' + ','.join(m for m in names if m in sys.modules),"
        " file=sys.stderr))\n"
        "from dexter.cli.app import main\n"
        f"sys.argv = ['dexter', 'ask', '--model', {model!r}, 'What is 2+2?']\n"
        "main()\n"
    )
    with FakeLLM() as fake:
        fake.enqueue(Reply(text="4."))
        env = cli_env(fake, tmp_path)
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert len(fake.requests) == 1
    assert proc.returncode == 0, proc.stderr
    assert "4." in proc.stdout
    line = next(text for text in proc.stderr.splitlines() if text.startswith("LOADED="))
    assert line == f"LOADED={sdk}", proc.stderr
