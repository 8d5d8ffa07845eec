"""The interactive session (``dexter`` with no command).

- :mod:`dexter.repl.app`: :class:`Repl`, the input loop, runs, interrupts and the queue
  (its docstring explains how rich output and prompt-toolkit input share the terminal).
- :mod:`dexter.repl.handlers` / :mod:`dexter.repl.commands`: slash commands.
- :mod:`dexter.repl.dialogs` / :mod:`dexter.repl.dialog_app`: approval, question and picker
  prompts.
- :mod:`dexter.repl.settings_store`: choices saved in ``DEXTER_HOME/settings.json``.
- :mod:`dexter.repl.main`: :func:`start`, called by ``dexter``.
"""

from dexter.repl.settings_store import load_saved_model

__all__ = ["load_saved_model"]
