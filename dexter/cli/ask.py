"""``dexter ask``: one question, streamed live (or as plain lines / JSON), then exit."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dexter.agent.executor import ApprovalRequest, Approver
from dexter.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    print_error,
    settings_for,
    stdout_console,
)
from dexter.config import ConfigError
from dexter.events import ApprovalChoice, Done


@dataclass
class AskOptions:
    """The flags of ``dexter ask``."""

    question: str
    model: str | None = None
    max_iterations: int | None = None
    allow: list[str] = field(default_factory=list)
    yes: bool = False
    config: Path | None = None
    output: Path | None = None
    json_out: bool = False
    trace: bool = False
    no_memory: bool = False
    plain: bool = False


def preapproval(allow: list[str], yes: bool) -> Approver:
    """The non-interactive approver: only what ``--allow``/``--yes`` approved runs.

    ``--allow`` takes a tool name (``write_file``) or the exact rule the engine proposes
    (``Bash(git log:*)``). Calls the engine denies never reach an approver, so the
    built-in deny floor holds even with ``--yes``.
    """
    allowed = {item.strip() for item in allow if item.strip()}

    async def approve(request: ApprovalRequest) -> ApprovalChoice:
        if yes or request.tool in allowed:
            return "allow-once"
        if request.decision.proposed_rule and request.decision.proposed_rule in allowed:
            return "allow-once"
        return "deny"

    return approve


def run_ask(options: AskOptions) -> int:
    """Run one question; returns the process exit code."""
    if not options.question.strip():
        print_error("The question is empty. Usage: dexter ask \"your question\"")
        return EXIT_USAGE
    try:
        settings = settings_for(options.config, model=options.model,
                                max_iterations=options.max_iterations,
                                trace=True if options.trace else None,
                                **({"memory.enabled": False} if options.no_memory else {}))
        from dexter.agent.factory import build_session
        from dexter.context.trace import stderr_trace

        session = build_session(
            settings,
            approver=preapproval(options.allow, options.yes),
            interactive=False,
            trace=stderr_trace() if settings.trace else None,
        )
    except (CliError, ConfigError) as exc:
        print_error(str(exc))
        return EXIT_USAGE

    from dexter.render import choose_renderer

    console = stdout_console(plain=options.plain or options.json_out)
    renderer = choose_renderer(console, json=options.json_out,
                               is_terminal=console.is_terminal and not options.plain)
    done: Done | None = None

    async def consume() -> None:
        nonlocal done
        try:
            async for event in session.agent.run(options.question):
                renderer.handle(event)
                if isinstance(event, Done):
                    done = event
        finally:
            await _close_models(session)

    try:
        asyncio.run(consume())
    except KeyboardInterrupt:
        renderer.close()
        pad = session.agent.scratchpad
        where = f" Everything done so far is in {pad.path}." if pad is not None else ""
        sys.stderr.write(f"\nInterrupted.{where}\n")
        return EXIT_INTERRUPTED
    finally:
        renderer.close()

    if done is None:
        print_error("The run ended without an answer.")
        return EXIT_FAILED
    if options.output is not None and done.status == "ok":
        try:
            options.output.parent.mkdir(parents=True, exist_ok=True)
            options.output.write_text(done.answer.rstrip() + "\n", encoding="utf-8")
        except OSError as exc:
            print_error(f"Could not write the answer to {options.output}: {exc.strerror}.")
            return EXIT_FAILED
    return EXIT_OK if done.status == "ok" else EXIT_FAILED


async def _close_models(session: object) -> None:
    agent = getattr(session, "agent", None)
    if agent is None:
        return
    seen: set[int] = set()
    for model in (agent.setup.model, agent.setup.fast_model):
        if id(model) not in seen:
            seen.add(id(model))
            with contextlib.suppress(Exception):  # closing must never hide the outcome
                await model.aclose()
