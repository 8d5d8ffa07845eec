"""``python -m dexter`` runs the CLI."""

import os
import sys

# ``python -m`` puts the working directory first on the module path. The workspace is
# writable by sandboxed commands, so a ``typer.py`` or ``rich.py`` one planted there must not
# be imported by the next start, outside the sandbox. dexter's own modules are found
# through its package, which is already imported, so the working directory can go.
_here = os.path.abspath(os.curdir)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

from dexter.cli.app import main  # noqa: E402

main()
