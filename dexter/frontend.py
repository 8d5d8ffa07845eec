"""What the two front ends (the `dexter` commands in cli/ and the REPL in repl/) share:
settings with friendly errors, error and warning lines, the output console, exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dexter.config import ConfigError, Settings
from dexter.config_trust import Confirm, Resolved, WorkspaceFile, resolve_settings
from dexter.providers.registry import default_model
from dexter.settings_file import SETTINGS_FILE, SettingsFileError, read_settings_file
from dexter.text import escape_controls
from dexter.tls import trust_problem

MODEL_KEY = "model"
SEARCH_KEY = "web_search_provider"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A usage or configuration problem: printed as one clear line, exit code 2."""


def settings_for(config: Path | None, **overrides: Any) -> Settings:
    """:func:`open_settings` for a command that needs only the settings (no trust prompt,
    no ``--trust-workspace``: a workspace file's widening options need ``dexter trust``)."""
    return open_settings(config, overrides).settings


def open_settings(config: Path | None, overrides: Mapping[str, Any] | None = None, *,
                  trust_workspace: bool = False, confirm: Confirm | None = None) -> Resolved:
    """The layered settings (the config file, ``.env``, the environment, the flags) with
    workspace trust applied (:mod:`dexter.config_trust`; each ignored file is named once on
    stderr), the ``.env`` variables dexter uses added to the environment, then the saved
    choices (``/model``, ``/search``) and, when no model was chosen anywhere, the default
    model of a provider whose key is set. ``overrides``: the flags, as dotted keys (None
    values are ignored). Configuration errors become ``CliError``.

    The order for the model: ``--model`` > ``DEXTER_MODEL`` > ``model`` in the config file >
    the one saved by ``/model`` > the default for the keys present.
    """
    overrides = dict(overrides or {})
    flag = overrides.get("model")
    if flag is not None and not str(flag).strip():
        raise CliError("--model is empty: give a model name (see 'dexter models'), or leave "
                       "the flag out to use the default.")
    try:
        resolved = resolve_settings(config, overrides=overrides,
                                    trust_workspace=trust_workspace, confirm=confirm)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    os.environ.update(resolved.environ)
    if (problem := trust_problem()) is not None:
        raise CliError(problem)
    for notice in trust_notices(resolved):
        print_warning(notice)
    settings = resolved.settings
    chosen = flag is not None or bool(os.environ.get("DEXTER_MODEL")) \
        or settings.model != Settings().model
    apply_saved_choices(settings, model_flag=(flag or settings.model) if chosen else None)
    if not chosen and load_saved_model(settings) is None:
        settings.model = default_model()
    return resolved


def trust_notices(resolved: Resolved) -> list[str]:
    """What to say at start about the workspace files: each ignored one (which keys, how
    to trust it), the ones ``--trust-workspace`` let through, and other problems."""
    lines = []
    for file in resolved.files:
        if file.ignored and file.how != "declined":  # a "no" at the prompt was answered there
            lines.append(file.notice() or "")
        elif file.how == "flag":
            keys = ", ".join(dict.fromkeys(w.key for w in file.widening))
            lines.append(f"--trust-workspace: using {keys} from {file.path} for this run.")
    return [*lines, *resolved.notices]


def confirm_on_terminal(file: WorkspaceFile) -> bool:
    """Ask on the terminal whether to trust a workspace file's widening options (the
    interactive start). Only "y" or "yes" trusts; Ctrl-C or end of input is a no."""
    print_warning(file.describe())
    sys.stderr.write("Use these options? Say yes only if you wrote them; dexter asks again "
                     "whenever the file changes. [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (KeyboardInterrupt, EOFError):
        answer = ""
    if answer.strip().lower() in {"y", "yes"}:
        sys.stderr.write("Trusted. `dexter trust --revoke` forgets it.\n")
        return True
    sys.stderr.write("Not trusted: this session runs without those options "
                     "(`dexter trust` to trust them later).\n")
    return False


def _saved_string(settings: Settings, key: str) -> str | None:
    try:
        value = read_settings_file(settings.home_path / SETTINGS_FILE).get(key)
    except SettingsFileError:
        return None
    return value.strip() if isinstance(value, str) and value.strip() else None


def load_saved_model(settings: Settings) -> str | None:
    """The model picked with ``/model`` in an earlier session, if any (unreadable file: None)."""
    return _saved_string(settings, MODEL_KEY)


def load_saved_search_provider(settings: Settings) -> str | None:
    """The web search provider picked with ``/search``, if any."""
    return _saved_string(settings, SEARCH_KEY)


def apply_saved_choices(settings: Settings, *, model_flag: str | None,
                        env: Mapping[str, str] | None = None) -> None:
    """Start with the saved model and search provider.

    An explicit choice for this invocation wins: ``--model`` (``model_flag``; also a model
    named in the config file) or ``DEXTER_MODEL`` for the model,
    ``DEXTER_TOOLS_WEB_SEARCH_PROVIDER`` for the search provider.
    """
    env = os.environ if env is None else env
    model = load_saved_model(settings)
    if model and not model_flag and not env.get("DEXTER_MODEL"):
        settings.model = model
    search = load_saved_search_provider(settings)
    if search and not env.get("DEXTER_TOOLS_WEB_SEARCH_PROVIDER"):
        settings.tools.web_search_provider = search


EXAMPLE_SCRATCHPAD = Path(__file__).resolve().parents[1] / "scratchpads" / "example-apple.jsonl"


def without_a_key(cwd: Path | None = None) -> str:
    """What a user can do before setting any key, for every no-key message (``dexter ask``'s
    error, the REPL's guidance): one place, so each such hint is added once (the example
    run only where the repository's file is there)."""
    hints = ["dexter data reads the data itself: statements, segments, filings, insider "
             "trades, 13F holdings (try: dexter data statements AAPL)"]
    if EXAMPLE_SCRATCHPAD.is_file():
        where = EXAMPLE_SCRATCHPAD
        with contextlib.suppress(ValueError):
            where = EXAMPLE_SCRATCHPAD.relative_to((cwd or Path.cwd()).resolve())
        hints.append(f"dexter replay {where} shows a scripted example run on Apple's real "
                     "SEC filings")
    return "Without a key: " + "; ".join(hints) + "."


def config_problem(exc: Exception) -> str:
    """The line to print for a configuration error: its message, and for a missing key
    what can be done without one."""
    from dexter.providers.registry import MissingKeyError

    hint = without_a_key() if isinstance(exc, MissingKeyError) else ""
    return f"{exc}\n{hint}" if hint else str(exc)


def print_error(message: str) -> None:
    """Print an error to stderr (red on a terminal); control characters in it (from a
    provider's error body, a file name) are shown, not sent to the terminal."""
    from rich.console import Console
    from rich.text import Text

    # The message is plain text: a "[context]" in it must print as written, not as markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text("Error: ", style="bold red") + Text(escape_controls(message)))


def print_warning(message: str) -> None:
    """Print a warning to stderr (yellow on a terminal), control characters shown."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text("Warning: ", style="bold yellow") + Text(escape_controls(message)))


def stdout_console(plain: bool = False) -> Any:
    """The console for run output; plain when asked or when stdout is not a terminal."""
    from rich.console import Console

    if plain:
        return Console(force_terminal=False, color_system=None, highlight=False, soft_wrap=True)
    return Console(highlight=False)


# The columns of the model table, in the order they are given up when the terminal is too
# narrow for all of them: never the model id, the one thing a user must copy whole.
_MODEL_COLUMNS = (("Provider", "left"), ("Model", "left"), ("Context", "right"), ("Key", "left"),
                  ("", "left"))
_DROP_ORDER = ("Provider", "Context", "", "Key")
_NO_WRAP = ("Model", "Context")


def models_table(rows: Sequence[Any], console: Any, *, box: bool = True) -> Any:
    """The table of ``dexter models`` and ``/models`` (``rows``: ``ModelRow``s).

    No model id, provider, number or key variable name is ever cut or wrapped: a column is
    never narrower than its longest such word (the Model and Context columns do not wrap at
    all; a key's state may go to the next line). On a terminal too narrow for every column
    at that width, whole columns are left out until the rest fits (the provider, then the
    context window, the default/fast marks, the key); when stdout is not a terminal, print
    the table at :func:`natural_width`, so no row wraps."""
    from rich.table import Table

    names = [name for name, _ in _MODEL_COLUMNS]
    cells = [row.cells() for row in rows]

    def narrowest(i: int) -> int:
        texts = [names[i], *(row[i] for row in cells)]
        if names[i] in _NO_WRAP:
            return max(map(len, texts))
        return max(len(word) for text in texts for word in text.split() or [""])

    def build(kept: list[int]) -> Any:
        table = Table(title="Models" if box else None, title_justify="left",
                      show_edge=box, pad_edge=box)
        for i in kept:
            name, justify = _MODEL_COLUMNS[i]
            table.add_column(name, justify=justify,  # type: ignore[arg-type]
                             no_wrap=name in _NO_WRAP, min_width=narrowest(i),
                             overflow="fold")  # below that width: every character kept
        for row in cells:
            table.add_row(*(row[i] for i in kept))
        return table

    kept = list(range(len(names)))
    if console.is_terminal:
        for name in _DROP_ORDER:
            # each column: its text, a space of padding each side, one rule between columns
            # (and at both edges with a box)
            need = sum(narrowest(i) for i in kept) + 3 * len(kept) + (1 if box else -3)
            if need <= console.width or len(kept) == 1:
                break
            kept.remove(names.index(name))
    return build(kept)


def natural_width(console: Any, renderable: Any) -> int:
    """How wide ``renderable`` is when nothing has to wrap (for output that is not a
    terminal, where no width is imposed)."""
    from rich.measure import Measurement

    wide = console.options.update(width=10_000, max_width=10_000)
    return int(Measurement.get(console, wide, renderable).maximum)
