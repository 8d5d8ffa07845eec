"""The one exception a tool raises for an expected failure (below every other package)."""

from __future__ import annotations


class ToolFailure(Exception):
    """Raised by a tool for an expected failure; the message is shown to the model as is."""
