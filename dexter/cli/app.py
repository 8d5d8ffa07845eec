"""The ``dexter`` command. Subcommands import their machinery lazily so start-up stays fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dexter import __version__
from dexter.cli.global_options import GlobalOptionsGroup, option_hint

app = typer.Typer(
    cls=GlobalOptionsGroup,  # options before a command go to the command (global_options.py)
    add_completion=False,
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
    help="dexter: a terminal research agent for deep financial research.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML config file (else DEXTER_CONFIG, else the user config dir).")
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model, e.g. gpt-5.6-sol, claude-sonnet-4-6, ollama:llama3.1, provider:model.")
]
ContinueOpt = Annotated[bool, typer.Option("--continue", help="Reopen the most recently used saved session.")]
NoMemoryOpt = Annotated[bool, typer.Option("--no-memory", help="Turn persistent memory off.")]
TrustOpt = Annotated[bool, typer.Option("--trust-workspace", help="For this run, use the options of the workspace's .env and config that widen what dexter may do (else only after `dexter trust`).")]
option_hint("--trust-workspace", "It is for the interactive session and dexter ask; for "
                                 "other commands, trust the files with `dexter trust` first.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dexter {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    no_memory: NoMemoryOpt = False,
    continue_: ContinueOpt = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", metavar="[ID]",
                                               help="Reopen a saved session by id (or the start of one); without an id, pick one.")] = None,
    trust_workspace: TrustOpt = False,
) -> None:
    """Run with no command to open an interactive research session. The options also
    apply to a command that follows them: ``dexter --config c.toml models``."""
    if ctx.invoked_subcommand is not None:
        return  # GlobalOptionsGroup moved the options onto the command
    from dexter.cli.repl_entry import start_repl

    raise typer.Exit(start_repl(model=model, config=config, no_memory=no_memory,
                                continue_=continue_, resume=resume,
                                trust_workspace=trust_workspace))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The research question.")],
    model: ModelOpt = None,
    max_iterations: Annotated[int | None, typer.Option("--max-iterations", min=1, help="Most model calls in the run (default 30).")] = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Pre-approve a tool (write_file, bash, ...) or a rule such as 'Bash(git log:*)'. Repeatable.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every call that would ask (the deny floor still applies).")] = False,
    config: ConfigOpt = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the answer as a report: .md, .html, .pdf or .xlsx (by the extension).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object per event instead of the live view.")] = False,
    trace: Annotated[bool, typer.Option("--trace", help="Log each context stage to stderr (also DEXTER_TRACE=1).")] = False,
    no_memory: NoMemoryOpt = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain lines even on a terminal.")] = False,
    charts: Annotated[bool, typer.Option("--charts", help="After the answer, a compact chart of each time series the run pulled (on a full terminal only).")] = False,
    skill: Annotated[str | None, typer.Option("--skill", metavar="NAME", help="Load this skill's instructions for the run (see dexter skills).")] = None,
    continue_: ContinueOpt = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", metavar="ID", help="Ask in the saved session with this id (or the start of one).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", metavar="USD", help="Stop before a request that would take the run past this many US dollars.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", metavar="N", help="Stop before a request that would take the run past N tokens.")] = None,
    trust_workspace: TrustOpt = False,
) -> None:
    """Answer one question non-interactively and exit (0 answered, 1 failed, 2 bad usage)."""
    from dexter.cli.ask import AskOptions, run_ask

    options = AskOptions(
        question=question, model=model, max_iterations=max_iterations, allow=list(allow or []),
        yes=yes, config=config, output=output, json_out=json_out, trace=trace,
        no_memory=no_memory, plain=plain, continue_=continue_, resume=resume,
        skill=skill, charts=charts,
        max_cost=max_cost, max_tokens=max_tokens,
        trust_workspace=trust_workspace,
    )
    raise typer.Exit(run_ask(options))


@app.command()
def replay(
    file: Annotated[Path, typer.Argument(help="A scratchpad .jsonl file.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the events as JSON lines.")] = False,
) -> None:
    """Re-render a past run from its scratchpad file."""
    from dexter.cli.replay_cmd import run_replay

    raise typer.Exit(run_replay(file, json_out=json_out))


@app.command()
def rerun(
    file: Annotated[Path, typer.Argument(help="The scratchpad .jsonl file of the run to repeat.")],
    model: ModelOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object per event instead of the live view.")] = False,
    live_tools: Annotated[bool, typer.Option("--live-tools", help="Run calls the recording does not have with the real tools (else they get an error).")] = False,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Pre-approve a tool or a rule, as for ask. Repeatable.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every call that would ask (the deny floor still applies).")] = False,
    max_iterations: Annotated[int | None, typer.Option("--max-iterations", min=1, help="Most model calls in the run (as for ask).")] = None,
    config: ConfigOpt = None,
    trace: Annotated[bool, typer.Option("--trace", help="Log each context stage to stderr (also DEXTER_TRACE=1).")] = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain lines even on a terminal.")] = False,
) -> None:
    """Ask a recorded question again, its tools answered from the recorded results (memory off)."""
    from dexter.cli.rerun_cmd import RerunOptions, run_rerun

    options = RerunOptions(
        scratchpad=file, model=model,
        live_tools=live_tools, allow=list(allow or []), yes=yes, config=config,
        max_iterations=max_iterations, json_out=json_out, trace=trace, plain=plain,
    )
    raise typer.Exit(run_rerun(options))


@app.command()
def models(config: ConfigOpt = None, model: ModelOpt = None) -> None:
    """List providers, models, context windows and which API keys are set."""
    from dexter.cli.models_cmd import run_models

    raise typer.Exit(run_models(config, model))


@app.command()
def skills(config: ConfigOpt = None) -> None:
    """List the skills (name, description, where each came from) and any that are malformed."""
    from dexter.cli.skills_cmd import run_skills

    raise typer.Exit(run_skills(config))


@app.command()
def sandbox(
    config: ConfigOpt = None,
    check: Annotated[bool, typer.Option("--check", help="Run real commands in the sandbox that try to reach what it hides (exit 1 if any gets through).")] = False,
) -> None:
    """Show whether shell commands are contained here and what they may see."""
    from dexter.cli.sandbox_cmd import run_sandbox

    raise typer.Exit(run_sandbox(config, check))


@app.command()
def trust(
    config: ConfigOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Trust the files without asking (after showing what they set).")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Forget the trust of this workspace's files.")] = False,
    show_all: Annotated[bool, typer.Option("--list", help="List every trusted file recorded in DEXTER_HOME.")] = False,
) -> None:
    """Show which options of the workspace's .env and config widen what dexter may do, and trust them (or --revoke)."""
    from dexter.cli.trust_cmd import run_trust

    raise typer.Exit(run_trust(config, yes=yes, revoke=revoke, show_all=show_all))


@app.command()
def sessions(
    config: ConfigOpt = None,
    show_all: Annotated[bool, typer.Option("--all", "-a", help="List every session, not only the 20 most recent.")] = False,
) -> None:
    """List the saved sessions, newest first (resume one with dexter --resume ID)."""
    from dexter.cli.sessions_cmd import run_sessions

    raise typer.Exit(run_sessions(config, show_all=show_all))


memory_app = typer.Typer(help="Inspect and search dexter's persistent memory.", no_args_is_help=True,
                         rich_markup_mode=None)
app.add_typer(memory_app, name="memory")


@memory_app.command("list")
def memory_list(config: ConfigOpt = None, no_memory: NoMemoryOpt = False) -> None:
    """List the memory files and the index status."""
    from dexter.cli.memory_cmd import run_memory

    raise typer.Exit(run_memory("list", config, no_memory=no_memory))


@memory_app.command("search")
def memory_search(query: Annotated[str, typer.Argument(help="What to look for.")],
                  config: ConfigOpt = None, no_memory: NoMemoryOpt = False) -> None:
    """Search memory (keywords, plus vectors when an embedding source is available)."""
    from dexter.cli.memory_cmd import run_memory

    raise typer.Exit(run_memory("search", config, query, no_memory=no_memory))


@memory_app.command("show")
def memory_show(file: Annotated[str, typer.Argument(help="MEMORY.md, a YYYY-MM-DD.md file, long_term or daily.")],
                config: ConfigOpt = None, no_memory: NoMemoryOpt = False) -> None:
    """Print one memory file."""
    from dexter.cli.memory_cmd import run_memory

    raise typer.Exit(run_memory("show", config, file, no_memory=no_memory))


@memory_app.command("reindex")
def memory_reindex(config: ConfigOpt = None, no_memory: NoMemoryOpt = False) -> None:
    """Rebuild the memory index from the files (the files are the source of truth)."""
    from dexter.cli.memory_cmd import run_memory

    raise typer.Exit(run_memory("reindex", config, no_memory=no_memory))


mcp_app = typer.Typer(help="MCP servers used as tools ([mcp.servers.NAME] in the config; docs/mcp.md).",
                      no_args_is_help=True, rich_markup_mode=None)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(config: ConfigOpt = None, model: ModelOpt = None) -> None:
    """Start the configured MCP servers and list their status, tools and schema tokens."""
    from dexter.cli.mcp_cmd import run_mcp_list

    raise typer.Exit(run_mcp_list(config, model))


from dexter.cli.data_cmd import data_app  # noqa: E402  (typer only; runs import lazily)

app.add_typer(data_app, name="data")


eval_app = typer.Typer(help="Measure answer quality on a dataset of questions with rubrics (docs/eval.md).",
                       invoke_without_command=True, rich_markup_mode=None)
app.add_typer(eval_app, name="eval")


@eval_app.callback()
def eval_main(
    ctx: typer.Context,
    model: ModelOpt = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help="CSV or JSONL with question, answer and rubric columns (default: the public 50 of the Vals AI Finance Agent Benchmark).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Model that grades the answers (default: the provider's fast model).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Questions run at once (default 4).")] = 4,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N questions (after --type).")] = None,
    type_name: Annotated[str | None, typer.Option("--type", help="Only questions of this type, e.g. 'Trends'.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output directory (default evals/<date>-<model>/); an existing one is resumed.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON lines instead of the progress bar.")] = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain lines even on a terminal.")] = False,
    max_cost: Annotated[float | None, typer.Option("--max-cost", help="Stop starting new questions once the spend reaches this many US dollars.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="When resuming, run failed and judge-error questions again too.")] = False,
    from_runs: Annotated[Path | None, typer.Option("--from-runs", help="Re-run an earlier eval's questions on the tool results its scratchpads recorded.")] = None,
    max_iterations: Annotated[int | None, typer.Option("--max-iterations", min=1, help="Most model calls per question (default 30).")] = None,
    allow: Annotated[list[str] | None, typer.Option("--allow", help="Pre-approve a tool or a rule, as for ask. Repeatable.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every call that would ask (the deny floor still applies).")] = False,
    config: ConfigOpt = None,
) -> None:
    """Run every question as a normal non-interactive run, grade each answer against its rubric, and write results.jsonl, summary.json and report.md."""
    if ctx.invoked_subcommand is not None:
        return
    from dexter.cli.eval_cmd import EvalCommand, run_eval

    command = EvalCommand(
        model=model, config=config,
        max_iterations=max_iterations, json_out=json_out, plain=plain, dataset=dataset,
        judge_model=judge_model, jobs=jobs, limit=limit, type_name=type_name, out=out,
        max_cost=max_cost, allow=list(allow or []), yes=yes, retry_failed=retry_failed,
        from_runs=from_runs,
    )
    raise typer.Exit(run_eval(command))


@eval_app.command("compare")
def eval_compare(
    dir_a: Annotated[Path, typer.Argument(help="The --out directory of the first eval (A).")],
    dir_b: Annotated[Path, typer.Argument(help="The --out directory of the second eval (B).")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object instead of the table.")] = False,
) -> None:
    """Two evals side by side: per-question score deltas (B minus A), totals, cost ratio."""
    from dexter.cli.eval_cmd import run_compare

    raise typer.Exit(run_compare(dir_a, dir_b, json_out=json_out))


def _resume_without_id(args: list[str]) -> list[str]:
    """``args`` with a bare ``dexter --resume`` (no id after it) made ``--resume=``, the
    picker: typer has no options whose value is optional."""
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    commands |= {g.name or "" for g in app.registered_groups}
    out = list(args)
    i = 0
    while i < len(out):
        arg = out[i]
        if arg in ("--resume", "-r"):
            following = out[i + 1] if i + 1 < len(out) else None
            if following is None or following.startswith("-") or following in commands:
                out[i] = "--resume="
                i += 1
                continue
            i += 2
        elif arg in ("--model", "-m", "--config", "-c"):
            i += 2
        elif arg.startswith("-") and arg != "--":
            i += 1
        else:
            break  # a command: its own options are its own
    return out


def main() -> None:
    """Console-script entry point."""
    try:
        app(args=_resume_without_id(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(130)
