"""The slash commands' handlers. Each takes the REPL and the text after the command.

The handlers see the REPL only as a :class:`~dexter.repl.protocol.ReplLike`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from rich.table import Table
from rich.text import Text

from dexter.config import ConfigError
from dexter.context import compaction
from dexter.context.tokens import estimate_message_tokens
from dexter.filelock import locked, write_atomic
from dexter.providers.registry import (
    PROVIDERS,
    ProviderInfo,
    api_key_for,
    model_name_problem,
    model_rows,
    provider_info,
    resolve_model,
)
from dexter.repl.commands import Command, CommandRegistry
from dexter.repl.context_report import context_report
from dexter.repl.cost import format_cost, model_price
from dexter.repl.dialogs import Option, SelectDialog
from dexter.repl.protocol import ReplLike
from dexter.repl.settings_store import (
    MODEL_KEY,
    SEARCH_KEY,
    SettingsStoreError,
    save_setting,
    settings_file,
)
from dexter.repl.view import (
    MUTED,
    PRIMARY,
    context_view,
    cost_view,
    help_view,
    history_view,
)
from dexter.secrets import scrub

RULES_FILE = "RULES.md"
TYPE_MODEL = "\x00type"


def search_providers() -> list[tuple[str, str, str]]:
    """``(id, name, key variable)`` of each web search provider, in fallback order."""
    from dexter.tools.web_search import PROVIDERS as SEARCH

    return [(p.id, p.name, p.key_env) for p in SEARCH]


def _key_status(provider: ProviderInfo) -> str:
    if provider.api_key_env is None:
        return "no key needed"
    return f"{provider.api_key_env} {'set' if api_key_for(provider) else 'missing'}"


# -- /help /history /scratchpad /cost /context -----------------------------------------------


async def help_command(repl: ReplLike, _arg: str) -> None:
    """``/help``: commands and keys."""
    repl.print(help_view(repl.registry))


async def history_command(repl: ReplLike, _arg: str) -> None:
    """``/history``: this session's questions and short answers."""
    repl.print(history_view(repl.conversation.turns, repl.conversation.summary))


async def scratchpad_command(repl: ReplLike, _arg: str) -> None:
    """``/scratchpad``: the file of the current (or last) run."""
    agent = repl.agent
    pad = agent.scratchpad if agent is not None else None
    if pad is None:
        repl.note(f"No run yet. Each run's log is written to {repl.settings.scratchpad_path}.")
        return
    label = "This run's" if repl.busy else "The last run's"
    repl.print(Text(f"{label} scratchpad: ", style=MUTED) + Text(str(pad.path)))
    repl.note(f"Replay it with: dexter replay {pad.path}")


async def mcp_command(repl: ReplLike, _arg: str) -> None:
    """``/mcp``: the session's MCP servers, their status and tools, and the tokens saved."""
    from dexter.agent.mcp_setup import report_lines

    session = repl.session
    if session is None:
        repl.note("No session is open (no model can run), so no MCP server was started.")
        return
    for line in report_lines(session.mcp, session.mcp_plan):
        repl.print(Text(line))


async def skills_command(repl: ReplLike, _arg: str) -> None:
    """``/skills``: the skills the agent can load, what each does and where it came from."""
    from pathlib import Path

    from dexter.skills.catalog import load_catalog, locations_text, skill_rows

    cwd = Path.cwd()
    catalog = load_catalog(repl.settings.home_path, cwd)
    for warning in catalog.warnings:
        repl.print(Text(f"⚠ {warning}", style="yellow"))
    if catalog.skills:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("Skill", "Description", "From"):
            table.add_column(column, overflow="fold")
        for row in skill_rows(catalog, cwd):
            table.add_row(*(Text(cell) for cell in row))
        repl.print(table)
        repl.note("Ask for the task (\"a DCF of NVDA\") and the agent loads the skill; "
                  "skills added after the session started are loaded on /model or a restart.")
    else:
        repl.note("No skills found.")
    repl.note(locations_text(catalog))


async def cost_command(repl: ReplLike, _arg: str) -> None:
    """``/cost``: session tokens and estimated cost."""
    price = model_price(repl.settings.model, repl.settings)
    repl.print(cost_view(repl.costs, repl.settings.model, price is not None))


async def budget_command(repl: ReplLike, arg: str) -> None:
    """``/budget``: the session's spending limit and what was spent; ``/budget 0.50`` sets a
    dollar limit, ``/budget tokens 200000`` a token limit, ``/budget off`` clears both."""
    limits, spent = repl.settings.limits, repl.conversation
    words = arg.split()
    try:
        if words == ["off"]:
            limits.max_cost_usd, limits.max_tokens = 0.0, 0
        elif len(words) == 2 and words[0] == "tokens":
            limits.max_tokens = int(_positive(int(words[1].replace(",", ""))))
        elif len(words) == 1:
            limits.max_cost_usd = _positive(float(words[0].lstrip("$")))
        elif words:
            raise ValueError
    except ValueError:
        repl.error("Usage: /budget [USD | tokens N | off], e.g. /budget 0.50")
        return
    cost = f"{format_cost(limits.max_cost_usd)}" if limits.max_cost_usd else "none"
    tokens = f"{limits.max_tokens:,} tokens" if limits.max_tokens else "none"
    repl.print(Text("Budget for this session: ", style=MUTED) + Text(f"{cost} · {tokens}")
               + Text(f" · spent {format_cost(spent.spent_usd)}, {spent.spent_tokens:,} tokens",
                      style=MUTED))


def _positive(value: float) -> float:
    if not value > 0:
        raise ValueError
    return value


async def context_command(repl: ReplLike, _arg: str) -> None:
    """``/context``: tokens in use, the threshold, what the next stage would do."""
    agent = repl.agent
    if agent is None:
        repl.warn(repl.problem or "No model is ready. Pick one with /model.")
        return
    pad = agent.scratchpad
    if repl.busy:
        messages, source = list(agent.messages), "this run, estimated"
        active = pad.active_tool_result_count() if pad is not None else 0
    else:
        messages, source = repl.next_request_view(), "next question's history, estimated"
        active = 0
    report = context_report(
        messages, cfg=repl.settings.context, threshold=agent.threshold,
        window=agent.setup.context_window, compactable=agent.compactable,
        memory_on=agent.setup.memory_dir is not None, active_results=active,
        extra_tokens=repl.tool_specs_tokens())
    repl.print(context_view(report, model=repl.model_label(), source=source))
    runner = agent.setup.shell_sandbox
    if runner is not None:
        (repl.note if runner.status.active else repl.warn)(runner.status.describe())


# -- /clear /compact ----------------------------------------------------------------------------


async def clear_command(repl: ReplLike, _arg: str) -> None:
    """``/clear``: forget the conversation (the model's history too) and clear the screen.

    What follows is a new saved session; the cleared one can still be resumed."""
    repl.conversation.clear()
    repl.new_session()
    repl.queue.clear()
    repl.context_tokens = repl.estimate_next_request()
    if repl.fancy:
        from prompt_toolkit.shortcuts import clear

        clear()
    repl.console.clear()
    repl.note("Started a fresh conversation: earlier questions and answers are forgotten.")


def _conversation_text(repl: ReplLike) -> str:
    parts = []
    if repl.conversation.summary:
        parts.append("### Summary of earlier turns\n" + repl.conversation.summary)
    for n, turn in enumerate(repl.conversation.turns, 1):
        answer = turn.answer if turn.status == "ok" else f"({turn.status})"
        parts.append(f"### Turn {n}\nQuestion: {turn.query}\nAnswer: {answer}")
    agent = repl.agent
    pad = agent.scratchpad if agent is not None else None
    if pad is not None:
        data = pad.tool_results_text()
        if data.strip():
            parts.append("### Data retrieved in the last run\n" + data)
    return "\n\n".join(parts)


async def compact_command(repl: ReplLike, _arg: str) -> None:
    """``/compact``: summarize the conversation now; the summary replaces the history."""
    agent = repl.agent
    if agent is None:
        repl.warn(repl.problem or "No model is ready. Pick one with /model.")
        return
    if not repl.conversation.turns:
        repl.note("Nothing to compact yet.")
        return
    before = estimate_message_tokens(repl.conversation.messages())
    repl.note(f"Compacting the conversation with {agent.setup.fast_model.model}…")
    try:
        result = await compaction.compact(
            agent.setup.fast_model, "Continue this research conversation with the user.",
            _conversation_text(repl), fast_window=agent.setup.fast_context_window)
    except compaction.CompactionError as exc:
        repl.error(f"Compaction failed, the history is unchanged: {exc}")
        return
    repl.conversation.replace_with_summary(result.summary)
    after = estimate_message_tokens(repl.conversation.messages())
    repl.costs.add(agent.setup.fast_model.model, result.usage.to_dict(),
                   model_price(agent.setup.fast_model.model, repl.settings))
    repl.context_tokens = repl.estimate_next_request()
    repl.print(Text("⏺ ", style=PRIMARY) + Text(
        f"Conversation compacted: ~{before:,} → ~{after:,} tokens of history"))


# -- /model /models /search -----------------------------------------------------------------


async def switch_model(repl: ReplLike, name: str) -> bool:
    """Use model ``name`` from now on and save it for the next sessions (a name dexter
    cannot route is refused with the nearest known names)."""
    problem = model_name_problem(name, repl.settings)
    if problem is not None:
        repl.error(f"{problem} Model unchanged.")
        return False
    try:
        resolved = resolve_model(name, repl.settings)
    except ConfigError as exc:
        repl.error(str(exc))
        return False
    provider = resolved.provider
    if provider.api_key_env and api_key_for(provider) is None:
        repl.warn(f"Cannot use {provider.display_name} without an API key: set "
                  f"{provider.api_key_env} in .env (or export it) and restart. Model unchanged.")
        return False
    previous = repl.settings.model
    repl.settings.model = resolved.name
    if not await repl.rebuild():
        repl.settings.model = previous
        await repl.rebuild()
        repl.warn(repl.problem or f"Could not switch to {resolved.name}. Model unchanged.")
        return False
    try:
        save_setting(settings_file(repl.settings), MODEL_KEY, resolved.name)
        saved = "saved for next sessions"
    except SettingsStoreError as exc:
        saved = f"not saved: {exc}"
    repl.context_tokens = repl.estimate_next_request()
    repl.print(Text("Model: ", style=MUTED) + Text(resolved.display_name, style=f"bold {PRIMARY}")
               + Text(f" ({resolved.name} · {provider.display_name}) · {saved}", style=MUTED))
    return True


def _provider_options(repl: ReplLike) -> list[Option[str]]:
    options = []
    for provider in PROVIDERS:
        current = " ✓" if repl.settings.model and _current_provider(repl) == provider.id else ""
        options.append(Option(f"{provider.display_name}{current}", provider.id,
                              _key_status(provider)))
    return options


def _marked(options: list[Option[str]]) -> int:
    """The index of the option marked current (✓), else 0: the cursor starts there."""
    return next((i for i, o in enumerate(options) if o.label.endswith(" ✓")), 0)


def _current_model(repl: ReplLike) -> str:
    try:
        return resolve_model(repl.settings.model, repl.settings).name
    except ConfigError:
        return repl.settings.model


def _current_provider(repl: ReplLike) -> str:
    try:
        return resolve_model(repl.settings.model, repl.settings).provider.id
    except ConfigError:
        return ""


def _model_options(provider: ProviderInfo, current: str = "") -> list[Option[str]]:
    ids = [m.id for m in provider.models] or [provider.default_model]
    options = []
    for model_id in ids:
        info = provider.find_model(model_id)
        label = f"{info.display_name} ({model_id})" if info and info.display_name != model_id else model_id
        name = model_id if provider.name_prefix or provider.id == "openai" else f"{provider.id}:{model_id}"
        mark = " ✓" if current in (name, model_id) and current else ""
        options.append(Option(label + mark, name))
    options.append(Option("Type a model name…", TYPE_MODEL))
    return options


async def model_command(repl: ReplLike, arg: str) -> None:
    """``/model`` picks provider then model; ``/model NAME`` switches directly."""
    if arg:
        await switch_model(repl, arg)
        return
    providers = _provider_options(repl)
    pick_provider = SelectDialog(
        [Text("Select provider", style="bold"),
         Text("Applies to this session and the next ones.", style=MUTED)],
        providers, escape_value=None, selected=_marked(providers))
    await repl.show_dialog(pick_provider)
    if not isinstance(pick_provider.result, str) or pick_provider.result == "abort":
        repl.note("Model unchanged.")
        return
    provider = provider_info(pick_provider.result, repl.settings)
    current = _current_model(repl) if provider.id == _current_provider(repl) else ""
    options = _model_options(provider, current)
    pick_model = SelectDialog(
        [Text(f"Select model for {provider.display_name}", style="bold"),
         Text(_key_status(provider), style=MUTED)],
        options, escape_value=None, text_option=len(options) - 1,
        text_prompt=f"Model name on {provider.display_name} (enter to use it, esc to go back):",
        selected=_marked(options))
    await repl.show_dialog(pick_model)
    choice = pick_model.result
    if not isinstance(choice, str) or choice == "abort":
        repl.note("Model unchanged.")
        return
    if choice not in {o.value for o in options} and ":" not in choice and not (
            provider.name_prefix and choice.startswith(provider.name_prefix)):
        choice = f"{provider.id}:{choice}" if provider.id != "openai" else choice
    await switch_model(repl, choice)


async def models_command(repl: ReplLike, _arg: str) -> None:
    """``/models``: every known model, its window and whether its key is set."""
    from dexter.frontend import models_table

    repl.print(models_table(model_rows(repl.settings), repl.console, box=False))
    repl.note(f"Current model: {repl.settings.model}. Switch with /model NAME.")


async def search_command(repl: ReplLike, arg: str) -> None:
    """``/search`` picks the preferred web search provider; ``/search NAME`` sets it."""
    providers = search_providers()
    key_vars = {pid: env for pid, _name, env in providers}
    choice: str | None = arg.strip().lower() or None
    if choice is None:
        current = repl.settings.tools.web_search_provider
        options = [Option(f"{name}{' ✓' if pid == current else ''}", pid,
                          f"{env} {'set' if os.environ.get(env) else 'missing'}")
                   for pid, name, env in providers]
        dialog = SelectDialog(
            [Text("Select web search provider", style="bold"),
             Text("dexter tries it first and falls back to the others whose key is set.",
                  style=MUTED)], options, escape_value=None, selected=_marked(options))
        await repl.show_dialog(dialog)
        choice = (dialog.result if isinstance(dialog.result, str) and dialog.result in key_vars
                  else None)
        if choice is None:
            repl.note("Search provider unchanged.")
            return
    if choice not in key_vars:
        repl.error(f"Unknown search provider '{choice}'. Choose one of: {', '.join(key_vars)}.")
        return
    repl.settings.tools.web_search_provider = choice
    await repl.rebuild()
    try:
        save_setting(settings_file(repl.settings), SEARCH_KEY, choice)
        saved = "saved for next sessions"
    except SettingsStoreError as exc:
        saved = f"not saved: {exc}"
    env = key_vars[choice]
    missing = "" if os.environ.get(env) else f" ({env} is not set, so it will be skipped)"
    repl.print(Text("Web search: ", style=MUTED) + Text(choice, style=f"bold {PRIMARY}")
               + Text(f" first · {saved}{missing}", style=MUTED))


# -- /memory /rules /exit ---------------------------------------------------------------------


async def memory_command(repl: ReplLike, arg: str) -> None:
    """``/memory [search QUERY | show FILE | reindex]``: what dexter remembers."""
    try:
        from dexter.memory.cli import memory_slash
        from dexter.memory.manager import MemoryManager
    except ImportError:
        repl.warn("Memory is not available in this build.")
        return
    manager = MemoryManager(repl.settings)
    try:
        await memory_slash(manager, repl.console, arg)
    finally:
        manager.close()
    recalled = repl.session.recalled if repl.session is not None else None
    if not arg.strip() and manager.enabled:
        repl.note(f"Loaded into this session: {', '.join(recalled.files)}"
                  f" (~{recalled.tokens:,} tokens)" if recalled is not None and recalled.files
                  else "Loaded into this session: nothing (no memory notes yet).")


def append_rule(path: Path, rule: str) -> None:
    """Add ``- rule`` as a line of the rules file, under its folder's lock, so two
    sessions adding rules at once keep both (the file may lack a final newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.parent):
        try:
            existing = path.read_bytes()
        except FileNotFoundError:
            existing = b""
        glue = b"" if not existing or existing.endswith(b"\n") else b"\n"
        write_atomic(path, existing + glue + f"- {rule}\n".encode(), prefix=".rules.")


async def rules_command(repl: ReplLike, arg: str) -> None:
    """``/rules`` shows the research rules; ``/rules add TEXT`` appends; ``/rules edit``."""
    path = repl.settings.home_path / RULES_FILE
    verb, _, rest = arg.partition(" ")
    verb = verb.lower()
    if verb == "add":
        text = " ".join(rest.split())
        if not text:
            repl.error("Give the rule: /rules add Always compare against the sector median")
            return
        try:
            append_rule(path, scrub(text))
        except OSError as exc:
            repl.error(f"Could not add the rule to {path}: {exc.strerror or exc}.")
            return
        await repl.rebuild()
        repl.note(f"Added to {path}; the model follows it from the next question.")
        return
    if verb == "edit":
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            repl.error(f"Set $EDITOR (e.g. export EDITOR=nano) or edit {path} yourself.")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        from prompt_toolkit.application import run_in_terminal

        await run_in_terminal(lambda: subprocess.call([*shlex.split(editor), str(path)]))
        await repl.rebuild()
        repl.note("Rules reloaded; the model follows them from the next question.")
        return
    if verb:
        repl.error("Use /rules, /rules add TEXT or /rules edit.")
        return
    text = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    if not text:
        repl.note(f"No research rules yet ({path}). Add one with /rules add TEXT, or /rules edit.")
        return
    repl.print(Text("Research rules ", style="bold") + Text(f"({path})", style=MUTED))
    repl.console.print(text, markup=False, highlight=False)


# -- /export /chart ------------------------------------------------------------------------------

NO_ANSWER = "No answer yet: ask a question first, then {what}."


async def export_command(repl: ReplLike, arg: str) -> None:
    """``/export FILE``: write the last answer's report, in the format the extension names
    (the same formats and path rules as ``dexter ask --output``)."""
    import asyncio
    from pathlib import Path

    from dexter.reports import FORMATS
    from dexter.reports.export import OutputRefused, open_output, save_report

    name = arg.strip()
    if len(name) > 1 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    if not name:
        repl.error(f"Usage: /export FILE, e.g. /export apple.xlsx "
                   f"({', '.join(sorted(FORMATS))}).")
        return
    report = repl.last_report
    if report is None:
        repl.note(NO_ANSWER.format(what=f"/export {name}"))
        return
    path = Path(name).expanduser()
    settings = repl.settings
    try:
        target = open_output(path, Path.cwd(), settings.home_path, flag="/export",
                             writable=settings.bash.allow_write)
    except OutputRefused as exc:
        repl.error(str(exc))
        return
    failed = await asyncio.to_thread(save_report, report, target,  # a PDF takes a moment
                                     home=settings.home_path)
    if failed is not None:
        repl.error(failed)
        return
    repl.print(Text("Wrote ", style=MUTED) + Text(str(path))
               + Text(f" ({len(report.tables)} data table{'s' * (len(report.tables) != 1)}, "
                      f"{len(report.cited)} cited source{'s' * (len(report.cited) != 1)})",
                      style=MUTED))


async def chart_command(repl: ReplLike, arg: str) -> None:
    """``/chart``: the last answer's time series, numbered; ``/chart NAME`` or ``/chart N``
    draws one as labelled bars."""
    from dexter.render.charts import bars_view, series_list_view
    from dexter.reports.series import all_series, find_series

    report = repl.last_report
    if report is None:
        repl.note(NO_ANSWER.format(what="/chart"))
        return
    series = all_series(report.tables)
    if not series:
        repl.note("The last answer pulled no time series with 3 or more periods to chart.")
        return
    wanted = arg.strip()
    if not wanted:
        repl.print(series_list_view(series))
        repl.note("Draw one with /chart NAME or /chart NUMBER.")
        return
    if wanted.isdigit():
        if not 1 <= int(wanted) <= len(series):
            repl.error(f"/chart {wanted}: there are {len(series)} series; give 1 to "
                       f"{len(series)}, or a name (/chart lists them).")
            return
        chosen = series[int(wanted) - 1]
    else:
        exact = [s for s in series if wanted.lower() in (s.name.lower(), s.shown_name.lower())]
        found = exact or find_series(series, wanted)
        if not found:
            repl.error(f"/chart {wanted}: no series by that name; /chart lists them.")
            return
        chosen = found[0]
        if len(found) > 1:
            repl.note(f"{len(found)} series match {wanted!r}; showing the first "
                      "(/chart lists them all).")
    width = max(10, min(60, repl.console.width - 40))
    repl.print(bars_view(chosen, width=width, bars=repl.fancy))


async def exit_command(repl: ReplLike, _arg: str) -> None:
    """``/exit``: leave."""
    repl.request_quit()


# -- the registry --------------------------------------------------------------------------------


def build_registry() -> CommandRegistry:
    """Every slash command, in the order ``/help`` lists them."""
    registry = CommandRegistry()
    for command in (
        Command("help", "Show commands and keys", help_command, read_only=True),
        Command("model", "Switch provider and model (saved)", model_command, usage="[NAME]"),
        Command("models", "List models, context windows and keys", models_command,
                read_only=True),
        Command("search", "Choose the preferred web search provider (saved)", search_command,
                usage="[PROVIDER]"),
        Command("clear", "Start a fresh conversation and clear the screen", clear_command),
        Command("history", "Show this session's questions", history_command, read_only=True),
        Command("context", "Show context use and what the next stage would do",
                context_command, read_only=True),
        Command("compact", "Summarize the conversation now to free context", compact_command),
        Command("memory", "Show what dexter remembers", memory_command,
                usage="[search QUERY | show FILE | reindex]",
                arguments=("search", "show", "reindex")),
        Command("rules", "Show or change your research rules", rules_command,
                usage="[add TEXT | edit]", arguments=("add", "edit")),
        Command("scratchpad", "Path of the current run's log file", scratchpad_command,
                read_only=True),
        Command("skills", "Skills the agent can load and where they came from",
                skills_command, read_only=True),
        Command("export", "Write the last answer as a report (.md, .xlsx, ...)", export_command,
                usage="FILE", path=True),
        Command("chart", "Chart a time series of the last answer", chart_command,
                usage="[NAME | NUMBER]", read_only=True),
        Command("cost", "Session tokens and estimated cost", cost_command, read_only=True),
        Command("mcp", "MCP servers, their tools and context cost", mcp_command, read_only=True),
        Command("budget", "Show or set the session's spending limit", budget_command,
                usage="[USD | tokens N | off]"),
        Command("exit", "Quit dexter", exit_command, read_only=True),
    ):
        registry.add(command)
    return registry


def argument_values(repl: ReplLike, command: str) -> list[str]:
    """What completion offers after ``/command ``: model names, search providers, the last
    answer's series."""
    if command == "model":
        return [row.model for row in model_rows(repl.settings)]
    if command == "search":
        return [pid for pid, _name, _env in search_providers()]
    if command == "chart" and repl.last_report is not None:
        from dexter.reports.series import all_series

        return list(dict.fromkeys(s.shown_name for s in all_series(repl.last_report.tables)))
    return []
