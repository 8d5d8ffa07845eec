"""``dexter mcp list``: the configured MCP servers, their status, tools and schema cost."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_USAGE, CliError, print_error, settings_for, stdout_console


def run_mcp_list(config: Path | None, model: str | None = None) -> int:
    """Start each configured server, list it, stop it; returns the exit code (0, or 1
    when a server failed). What a running server did wrong is one of its lines."""
    from dexter.agent.mcp_setup import plan_mcp, report_lines, start_mcp
    from dexter.config import ConfigError
    from dexter.providers.registry import resolve_model

    try:
        settings = settings_for(config, **({"model": model} if model else {}))
        window = resolve_model(settings.model, settings).context_window
    except (CliError, ConfigError) as exc:
        print_error(str(exc))
        return EXIT_USAGE
    failures: list[str] = []
    manager = start_mcp(settings, report=failures.append, notify=lambda _line: None)
    try:
        plan = plan_mcp(manager, settings, window) if manager is not None else None
        console = stdout_console()
        for line in report_lines(manager, plan):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        if plan is not None and plan.tools:
            console.print(f"context window of {settings.model}: {window:,} tokens; "
                          f"[mcp] max_schema_share = {settings.mcp.max_schema_share:g}",
                          markup=False, highlight=False, soft_wrap=True)
    finally:
        if manager is not None:
            manager.close()
    return 1 if failures else 0
