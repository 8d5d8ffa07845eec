"""The permission contract between the tool executor and the permission engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from dexter.sandbox.policy import Grants

Behavior = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """What to do with one tool call, and why.

    ``session_key`` groups calls that one "allow for this session" approval covers;
    ``proposed_rule`` is the rule an "always allow" answer would save (None: not offered);
    ``cacheable`` false means a session approval must not cover later calls;
    ``grants`` is what the shell sandbox adds for this command when it runs (network, paths
    outside the workspace); ``warning`` is shown in approval dialogs ("not sandboxed").
    """

    behavior: Behavior
    reason: str = ""
    session_key: str = ""
    proposed_rule: str | None = None
    cacheable: bool = True
    grants: Grants | None = None
    warning: str = ""


class PermissionEngine(Protocol):
    """Decides every tool call before it runs. Implementations must fail closed."""

    def evaluate(self, tool_name: str, args: dict[str, Any], needs_approval: bool) -> PermissionDecision:
        """Decide one call."""

    def add_rule(self, kind: Behavior, rule: str) -> None:
        """Persist a rule (used by "always allow")."""


class DefaultPermissions:
    """The minimal engine: tools that declare ``needs_approval`` ask, everything else runs."""

    def evaluate(self, tool_name: str, args: dict[str, Any], needs_approval: bool) -> PermissionDecision:
        if needs_approval:
            return PermissionDecision("ask", f"{tool_name} changes things and needs your approval.",
                                      session_key=tool_name)
        return PermissionDecision("allow", "Auto-approved.", session_key=tool_name)

    def add_rule(self, kind: Behavior, rule: str) -> None:
        return None


class SessionGrants(set[str]):
    """Session keys the user approved "for this session".

    ``bash:*`` grants last one query (call :meth:`new_query` when a new query starts);
    ``file:write`` and other grants last the whole session.
    """

    def covers(self, decision: PermissionDecision) -> bool:
        """True when an earlier "allow for this session" applies to this decision."""
        return decision.behavior == "ask" and decision.cacheable and \
            bool(decision.session_key) and decision.session_key in self

    def new_query(self) -> None:
        """Drop the per-query grants (every ``bash:`` key)."""
        for key in [k for k in self if k.startswith("bash:")]:
            self.discard(key)
