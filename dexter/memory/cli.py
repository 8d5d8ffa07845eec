"""Printing memory for people: ``dexter memory list|search|show|reindex`` and ``/memory``.

The shell commands are plain functions taking a ``MemoryManager`` and a rich ``Console`` and
returning an exit code (0 ok, 1 memory unavailable or off, 2 bad argument). ``memory_slash``
is the async variant for the REPL, which already runs an event loop.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dexter.memory.manager import MemoryManager, MemoryOff, MemoryStatus, SearchOutcome
from dexter.memory.store import LONG_TERM_FILE, MemoryPathError, daily_file_date

OK, UNAVAILABLE, BAD_ARGUMENT = 0, 1, 2


def print_status(status: MemoryStatus, console: Console) -> None:
    """One block: where memory lives, whether it works, how search runs, and sizes."""
    if not status.enabled:
        console.print(f"[yellow]{escape(status.reason)}[/yellow]")
        return
    state = "[green]available[/green]" if status.available else "[red]unavailable[/red]"
    console.print(f"Memory: {state}  ·  folder {escape(status.memory_dir)}")
    if status.mode == "hybrid":
        search = f"hybrid (vectors from {status.embedding_provider} {status.embedding_model} + keywords)"
    else:
        search = "keyword only"
    console.print(f"Search: {escape(search)}  ·  {status.files} files, {status.chunks} chunks"
                  f" ({status.embedded_chunks} with vectors, {status.session_chunks} from past "
                  "conversations)")
    if status.reason:
        style = "red" if not status.available else "dim"
        console.print(f"[{style}]{escape(status.reason)}[/{style}]")


def list_command(manager: MemoryManager, console: Console) -> int:
    """Status, then a table of the memory files."""
    status = manager.status()
    print_status(status, console)
    if not status.enabled:
        return UNAVAILABLE
    files = manager.store.list_files()
    if not files:
        console.print("No memory files yet. The agent writes them with memory_update; you can "
                      f"also edit {LONG_TERM_FILE} yourself.")
        return OK if status.available else UNAVAILABLE
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("File")
    table.add_column("Kind")
    table.add_column("Size", justify="right")
    table.add_column("Modified")
    for f in files:
        kind = ("long-term" if f.name == LONG_TERM_FILE
                else "daily" if daily_file_date(f.name) else "notes")
        modified = datetime.fromtimestamp(f.mtime).strftime("%Y-%m-%d %H:%M")
        table.add_row(escape(f.name), kind, f"{f.size:,} B", modified)
    console.print(table)
    return OK if status.available else UNAVAILABLE


def print_results(outcome: SearchOutcome, console: Console) -> None:
    """Search results: score, where, and the snippet."""
    if not outcome.available:
        console.print(f"[red]{escape(outcome.note)}[/red]")
        return
    if outcome.note:
        console.print(f"[yellow]{escape(outcome.note)}[/yellow]")
    if not outcome.results:
        console.print("No matches.")
        return
    for r in outcome.results:
        when = f"  {r.date}" if r.date else ""
        console.print(f"[bold]{escape(r.path)}[/bold]:{r.start_line}-{r.end_line}  "
                      f"[dim]score {r.score:.3f} ({r.match}){when}[/dim]")
        console.print(escape(r.snippet), highlight=False)
        console.print()


async def search_and_print(manager: MemoryManager, console: Console, query: str) -> int:
    """Search and print (for callers inside an event loop)."""
    if not query.strip():
        console.print("[red]Give a query: dexter memory search QUERY[/red]")
        return BAD_ARGUMENT
    outcome = await manager.search(query)
    print_results(outcome, console)
    return OK if outcome.available else UNAVAILABLE


def search_command(manager: MemoryManager, console: Console, query: str) -> int:
    """``dexter memory search QUERY``."""
    return asyncio.run(search_and_print(manager, console, query))


def show_command(manager: MemoryManager, console: Console, file: str) -> int:
    """``dexter memory show FILE``: the file's text (FILE may be long_term or daily)."""
    try:
        got = manager.get(file)
    except MemoryOff as exc:
        console.print(f"[yellow]{escape(str(exc))}[/yellow]")
        return UNAVAILABLE
    except (MemoryPathError, ValueError) as exc:
        console.print(f"[red]{escape(str(exc))}[/red]")
        return BAD_ARGUMENT
    if not got.exists:
        console.print(f"[yellow]{escape(got.path)} does not exist yet.[/yellow]")
        return BAD_ARGUMENT
    console.print(f"[bold]{escape(got.path)}[/bold] [dim]({got.total_lines} lines)[/dim]")
    console.print(got.text, markup=False, highlight=False)
    return OK


async def reindex_and_print(manager: MemoryManager, console: Console) -> int:
    """Rebuild the index from the files and print the new status."""
    if not manager.enabled:
        print_status(manager.status(), console)
        return UNAVAILABLE
    status = await manager.reindex(force=True)
    if status.available:
        console.print("Rebuilt the memory index from the files.")
    print_status(status, console)
    return OK if status.available else UNAVAILABLE


def reindex_command(manager: MemoryManager, console: Console) -> int:
    """``dexter memory reindex``."""
    return asyncio.run(reindex_and_print(manager, console))


async def memory_slash(manager: MemoryManager, console: Console, arg: str = "") -> int:
    """``/memory [list | search QUERY | show FILE | reindex]`` inside the REPL."""
    verb, _, rest = arg.strip().partition(" ")
    verb = verb.lower()
    if verb in ("", "list", "status"):
        return list_command(manager, console)
    if verb == "search":
        return await search_and_print(manager, console, rest)
    if verb == "show":
        return show_command(manager, console, rest.strip() or "long_term")
    if verb == "reindex":
        return await reindex_and_print(manager, console)
    console.print(f"[red]Unknown /memory command '{escape(verb)}'. "
                  "Use /memory, /memory search QUERY, /memory show FILE or /memory reindex.[/red]")
    return BAD_ARGUMENT
