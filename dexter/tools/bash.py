"""``bash(command, timeout, description)``: run one ``/bin/sh -c`` command in the workspace.

Every command runs inside the operating-system sandbox when one is available
(:mod:`dexter.sandbox.runner`: bubblewrap on Linux, ``sandbox-exec`` on macOS): the system
folders read-only, the workspace read-write except ``.git/config``, ``.git/hooks`` and
dexter's settings and records, an empty private ``HOME`` and ``/tmp``, ``DEXTER_HOME``
hidden, no network unless granted, and dexter's own process out of sight. The environment
is an allowlist (``PATH``, ``LANG``, ``LC_*``, ``TERM``, ``TZ``... plus ``[bash] env``), never
dexter's environment minus what looks secret. Memory, file size and process count are
capped (``[bash] memory_mb``, ``max_file_mb``, ``max_processes``).

The command gets no stdin and its own session and process group; stdout and stderr are each
kept up to 256 KB, the rest read and dropped (so the child never blocks on a full pipe) and
counted. On timeout (default ``[tools] bash_timeout`` = 120 s, at most 600 s) or
cancellation the whole group gets SIGTERM, then SIGKILL after a short grace; background
processes the command started are stopped when it finishes. Every call goes through the
permission engine first; its approval's grants (network, extra paths) reach the sandbox
through ``ToolContext.grants``. What a command did to a path dexter protects (a ``.git``
it created, a link on the way to dexter's settings) is rolled back after it and reported
twice: in the result the model reads, and as ``ToolOutput.alerts`` (a ``sandbox_alert``
event the terminal shows).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from dexter.sandbox.policy import SandboxPolicyError, build_policy, child_environment
from dexter.sandbox.process import run_command
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

MAX_TIMEOUT_SECONDS = 600


class BashParams(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(min_length=1, description="The shell command (run with /bin/sh -c).")
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_SECONDS,
                                description="Seconds before the command is stopped "
                                            "(default 120, max 600).")
    description: str | None = Field(default=None, description="What the command does, in a "
                                                              "few words (shown when asking).")


class BashTool(Tool[BashParams]):
    """Run a shell command (every command goes through the permission engine)."""

    name: ClassVar[str] = "bash"
    description: ClassVar[str] = (
        "Run a shell command with /bin/sh in the working directory, inside a sandbox: the "
        "workspace is writable, HOME and /tmp are empty and private, there is no network "
        "unless the user approves it, and nothing outside the workspace is visible except "
        "system folders. Some commands (secrets, destruction outside the workspace) are "
        "always refused. Output is capped at 256 KB per stream; timeout defaults to 120 s "
        "(max 600)."
    )
    params: ClassVar[type[BaseModel]] = BashParams
    needs_approval: ClassVar[bool] = True

    async def run(self, args: BashParams, ctx: ToolContext) -> str | ToolOutput:
        default = ctx.settings.tools.bash_timeout or 120
        timeout = max(1, min(args.timeout or default, MAX_TIMEOUT_SECONDS))
        ctx.progress(f"$ {args.command[:120]}")
        runner = ctx.shell_sandbox
        if runner is None or not runner.status.active:
            env = child_environment(ctx.settings.bash.env)
            return (await run_command(args.command, ctx.cwd, timeout, env=env)).text()
        try:
            policy = build_policy(ctx.settings, ctx.cwd, ctx.grants)
        except SandboxPolicyError as exc:
            raise ToolFailure(f"Not run: {exc}.") from None
        result = await run_command(
            args.command, ctx.cwd, timeout, runner=runner, policy=policy,
            quarantine=ctx.settings.home_path / "quarantine",
            waiting=lambda: ctx.progress("waiting for another dexter's command in this "
                                         "workspace to finish"))
        return ToolOutput(result.text(), alerts=result.findings)


def shell_tools() -> list[Tool[Any]]:
    """``bash`` and ``ask_user_question``, for the tool registry."""
    from dexter.tools.ask_user import AskUserQuestionTool

    return [BashTool(), AskUserQuestionTool()]
