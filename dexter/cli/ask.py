"""``dexter ask``: one question, streamed live (or as plain lines / JSON), then exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.config import ConfigError, Settings
from dexter.events import Done
from dexter.frontend import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    config_problem,
    open_settings,
    print_error,
    print_warning,
    stdout_console,
)

if TYPE_CHECKING:
    from dexter.agent.conversation import Conversation
    from dexter.agent.factory import Session


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
    continue_: bool = False
    """Ask in the most recently used saved session."""
    resume: str | None = None
    """Ask in the saved session whose id starts with this."""
    max_cost: float | None = None
    max_tokens: int | None = None
    skill: str | None = None
    """A skill whose instructions are loaded for the run (``--skill``)."""
    charts: bool = False
    """After the answer, a compact chart of each pulled time series (``--charts``)."""
    trust_workspace: bool = False
    """Use the widening options of the workspace's ``.env`` and config for this run."""


def run_ask(options: AskOptions) -> int:
    """Run one question; returns the process exit code."""
    if not options.question.strip():
        print_error("The question is empty. Usage: dexter ask \"your question\"")
        return EXIT_USAGE
    try:
        resolved = open_settings(options.config, {
            "model": options.model, "max_iterations": options.max_iterations,
            "trace": True if options.trace else None,
            "limits.max_cost_usd": options.max_cost, "limits.max_tokens": options.max_tokens,
            **({"memory.enabled": False} if options.no_memory else {}),
        }, trust_workspace=options.trust_workspace)
        settings = resolved.settings
        flags = flag_problem(settings, options.allow, output=options.output)
        if flags is not None:
            return flags
        from dexter.cli.sessions_cmd import AskSession

        saved = AskSession.open(settings, latest=options.continue_, prefix=options.resume,
                                model_flag=options.model)

        session = noninteractive_session(settings, options.allow, options.yes,
                                         skill=options.skill)
    except (CliError, ConfigError) as exc:
        print_error(config_problem(exc))
        return EXIT_USAGE
    problem = check_session(session, options.allow)
    if problem is not None:
        return problem
    target = None
    if options.output is not None:
        from dexter.reports.export import OutputRefused, open_output

        try:  # the folder is opened now: a command cannot redirect it during the run
            target = open_output(options.output, Path.cwd(), settings.home_path,
                                 writable=settings.bash.allow_write)
        except OutputRefused as exc:
            print_error(str(exc))
            return EXIT_USAGE
    saved.announce(settings.model)
    from dexter.agent.conversation import Conversation

    conversation = saved.record.conversation
    if conversation is None:
        conversation = Conversation()
    outcome = render_run(session, options.question, json_out=options.json_out,
                         plain=options.plain, conversation=conversation)
    saved.save(model=settings.model, scratchpad=session.agent.scratchpad)
    from dexter.config_trust import ConfigWatch

    for warning in ConfigWatch(resolved).newly_changed():
        print_warning(warning)
    if isinstance(outcome, int) or outcome.status != "ok":
        if target is not None:
            target.close()
        return outcome if isinstance(outcome, int) else EXIT_FAILED
    done = outcome
    if options.charts and not (options.plain or options.json_out):
        print_charts(done, options.question, conversation)
    if target is not None:
        from dexter.reports.export import export_report

        written = export_report(done, options.question, conversation.ledger, target,
                                home=settings.home_path)
        if written is not None:
            print_error(written)
            return EXIT_FAILED
    return EXIT_OK


def print_charts(done: Done, question: str, conversation: Conversation) -> None:
    """``--charts``: after the answer, a sparkline chart of each group of time series the
    run pulled. Nothing on a dumb terminal or when stdout is not a terminal."""
    console = stdout_console()
    if not console.is_terminal or console.is_dumb_terminal:
        return
    from dexter.render.charts import chart_view
    from dexter.reports import build_report, scrubbed
    from dexter.reports.series import charts_of

    report = scrubbed(build_report(done, question, "", conversation.ledger))
    for chart in charts_of(report.tables):
        console.print()
        console.print(chart_view(chart))


def flag_problem(settings: Settings, allow: list[str], *, output: Path | None = None,
                 recorded_tools: Collection[str] = ()) -> int | None:
    """The flags that need no session, checked before one is built (so before a missing
    key or a server start): EXIT_USAGE, with the problem printed, for an ``--allow`` value
    that names no tool of these settings (nor one of ``recorded_tools``) or is no rule, or
    an ``--output`` path that would be refused; else None."""
    from dexter.permissions.engine import allow_list_problems
    from dexter.tools.registry import tool_names

    problems = allow_list_problems([a.strip() for a in allow if a.strip()],
                                   tool_names(settings) | set(recorded_tools))
    if output is not None:
        from dexter.reports.export import output_problem

        refused = output_problem(output, Path.cwd(), settings.home_path)
        problems += [refused] if refused is not None else []
    if problems:
        print_error("\n".join(problems))
        return EXIT_USAGE
    return None


def check_session(session: Session, allow: list[str]) -> int | None:
    """Before a non-interactive run: EXIT_USAGE when an ``--allow`` value names no tool or
    rule (printed), else None after printing the settings and shell warnings."""
    setup = session.agent.setup
    from dexter.permissions.engine import allow_list_problems

    problems = allow_list_problems([a.strip() for a in allow if a.strip()],
                                   {tool.name for tool in setup.tools})
    if problems:
        print_error("\n".join(problems))
        return EXIT_USAGE
    for warning in getattr(getattr(setup.permissions, "engine", None), "warnings", []):
        print_error(f"settings.json: {warning}")
    from dexter.skills.catalog import load_catalog

    for warning in load_catalog(setup.settings.home_path, Path.cwd()).warnings:
        print_warning(warning)
    from dexter.agent.factory import shell_notice

    notice = shell_notice(session)
    if notice:
        print_warning(notice)
    return None


def render_run(session: Session, question: str, *, json_out: bool, plain: bool,
               conversation: Conversation | None = None) -> Done | int:
    """Run ``question`` on the session (in ``conversation``, else a fresh one), rendered
    live, as plain lines or as JSON lines, and close the session. Returns the ``Done``
    event, or the exit code of a run that ended without one (the reader went away,
    Ctrl-C, no answer)."""
    from dexter.render import choose_renderer

    console = stdout_console(plain=plain or json_out)
    renderer = choose_renderer(console, json=json_out,
                               is_terminal=console.is_terminal and not plain)
    done: Done | None = None

    async def consume() -> None:
        nonlocal done
        events = session.agent.run(question, conversation)
        try:
            async for event in events:
                renderer.handle(event)
                if isinstance(event, Done):
                    done = event
        finally:
            # Close the run here (its open stream too) when rendering fails, e.g. on a
            # closed pipe, rather than leaving it to the garbage collector mid-shutdown.
            await events.aclose()
            await session.aclose()

    try:
        asyncio.run(consume())
    except BrokenPipeError:
        # The reader went away (`dexter ask --json ... | head -1`): stop quietly.
        _discard_stdout()
        return EXIT_FAILED
    except KeyboardInterrupt:
        renderer.close()
        pad = session.agent.scratchpad
        where = f" Everything done so far is in {pad.path}." if pad is not None else ""
        sys.stderr.write(f"\nInterrupted.{where}\n")
        return EXIT_INTERRUPTED
    finally:
        with contextlib.suppress(BrokenPipeError):
            renderer.close()
    if done is None:
        print_error("The run ended without an answer.")
        return EXIT_FAILED
    return done


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def noninteractive_session(settings: Settings, allow: list[str], yes: bool,
                           **extra: Any) -> Session:
    """The session of a run with nobody to ask (``ask``, ``rerun``): ``--allow``/``--yes``
    decide every approval, and ``--trace`` logs the stages. ``extra`` goes to
    ``build_session`` (tools, skill, rerun_of)."""
    from dexter.agent.factory import build_session
    from dexter.context.trace import stderr_trace

    return build_session(settings, interactive=False,
                         trace=stderr_trace() if settings.trace else None,
                         preapproved=([a.strip() for a in allow if a.strip()], yes), **extra)
