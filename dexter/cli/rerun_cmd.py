"""``dexter rerun SCRATCHPAD``: ask a recorded question again, with its tools answered from
the recorded results (``dexter.rerun``), rendered like ``dexter ask``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from dexter.config import ConfigError
from dexter.frontend import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    print_error,
    settings_for,
)


@dataclass
class RerunOptions:
    """The flags of ``dexter rerun``."""

    scratchpad: Path
    model: str | None = None
    live_tools: bool = False
    allow: list[str] = field(default_factory=list)
    yes: bool = False
    config: Path | None = None
    max_iterations: int | None = None
    json_out: bool = False
    trace: bool = False
    plain: bool = False


def run_rerun(options: RerunOptions) -> int:
    """Rerun one scratchpad; returns the process exit code (0 answered, 1 failed, 2 bad
    usage or an unusable scratchpad, 130 interrupted)."""
    from dexter.rerun import RecordingError, load_recording, recorded_tools

    try:
        recording = load_recording(options.scratchpad)
    except RecordingError as exc:
        print_error(f"{exc}. Scratchpads are in ./scratchpads by default.")
        return EXIT_USAGE
    try:
        # Memory stays off: its recall is not in the recording, and a rerun must not
        # write what it concludes into the user's memory.
        settings = settings_for(options.config,
                                model=options.model or recording.model_name or None,
                                max_iterations=options.max_iterations,
                                trace=True if options.trace else None,
                                **{"memory.enabled": False})
        from dexter.cli.ask import flag_problem, noninteractive_session
        from dexter.tools.registry import build_tools

        flags = flag_problem(settings, options.allow, recorded_tools=recording.tool_names)
        if flags is not None:
            return flags

        # The MCP servers start too, so their tools keep their schemas and approval flags
        # and, with --live-tools, a call the recording lacks reaches the real server.
        session = noninteractive_session(
            settings, options.allow, options.yes, tools=build_tools(settings, interactive=False),
            rerun_of=recording.path,
            wrap_tools=lambda tools: recorded_tools(recording, tools, live=options.live_tools))
    except (CliError, ConfigError) as exc:
        print_error(str(exc))
        return EXIT_USAGE
    from dexter.cli.ask import check_session, render_run

    problem = check_session(session, options.allow)
    if problem is not None:
        return problem
    sys.stderr.write(_notice(recording.path, len(recording.results), recording.skipped,
                             live=options.live_tools))
    outcome = render_run(session, recording.question, json_out=options.json_out,
                         plain=options.plain)
    if isinstance(outcome, int):
        return outcome
    return EXIT_OK if outcome.status == "ok" else EXIT_FAILED


def _notice(path: Path, results: int, skipped: int, *, live: bool) -> str:
    new_calls = "run for real" if live else "get an error (--live-tools runs them)"
    lines = [f"Rerun of {path}: {_count(results, 'recorded tool result')} answer its calls; "
             f"calls it does not have {new_calls}."]
    if skipped:
        lines.append(f"Skipped {_count(skipped, 'unreadable line')} in {path}.")
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

