"""The interactive session (``dexter`` with no command).

- :mod:`dexter.repl.app`: :class:`Repl`, which composes the parts below; the input loop,
  runs, interrupts and the queue (its docstring explains how rich output and
  prompt-toolkit input share the terminal).
- :mod:`dexter.repl.session`: the agent session without any UI: opening and rebuilding
  it, one run and its record, the conversation, costs, context estimates.
- :mod:`dexter.repl.terminal`: the prompt-toolkit prompt, its keys, the bottom toolbar,
  Ctrl-C as a signal.
- :mod:`dexter.repl.dialog_host`: approvals and questions from the agent, shown in place
  of the prompt.
- :mod:`dexter.repl.handlers` / :mod:`dexter.repl.commands`: slash commands; the handlers
  see the REPL as :class:`dexter.repl.protocol.ReplLike`.
- :mod:`dexter.repl.dialogs` / :mod:`dexter.repl.dialog_app`: approval, question and picker
  prompts.
- :mod:`dexter.repl.settings_store`: choices saved in ``DEXTER_HOME/settings.json``.
- :mod:`dexter.repl.main`: :func:`start`, called by ``dexter``.
"""

from dexter.repl.settings_store import load_saved_model

__all__ = ["load_saved_model"]
