"""The fail-closed permission engine: every tool call is ``allow``, ``ask`` or ``deny``.

Shell commands (``bash``) run inside the operating-system sandbox when there is one
(:mod:`dexter.sandbox.runner`). Then, after the deny floor and deny rules, ``ask`` rules ask,
``allow`` rules allow, and every other command is allowed to run *contained* (``[bash]
auto_allow_sandboxed``) unless it wants something the sandbox does not give by default
(:mod:`needs`: the network, a path outside the workspace): then it asks, and the decision
carries those :class:`~dexter.sandbox.policy.Grants` to the sandbox. Nothing depends on the
parser being complete: what it misses stays contained.

Without a sandbox the parser is the only guard, and shell commands go, in order:

1. parse (:mod:`shell_parse`); 2. the built-in deny floor (:mod:`floor`, even for commands
the parser does not understand); 3. user ``deny`` rules (any segment); 4. not understood
-> ``ask`` (never cached for the session, no rule offered); 5. user ``ask`` rules (any
segment); 6. allowed when *every* segment matches an ``allow`` rule or is read-only inside
the workspace (:mod:`classify`); 7. otherwise ``ask``, offering an exact ``Bash(...)`` rule
for the one segment that needs approval, with the session key ``bash:<command>``.

``write_file``/``edit_file``: a path the sandbox refuses is denied up front; then deny, ask
and allow rules (``Write``/``Edit``); otherwise ``ask`` with the shared session key
``file:write``. ``web_fetch``: allowed unless a ``WebFetch``/``WebFetch(domain:...)`` deny or
ask rule matches the host. Any other tool: rules by tool name, else ``ask`` when it declares
``needs_approval``, else ``allow``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from dexter.permissions.base import Behavior, PermissionDecision
from dexter.permissions.classify import classify_segment
from dexter.permissions.floor import floor_reason
from dexter.permissions.needs import needed_grants
from dexter.permissions.rules import (
    Rule,
    RuleError,
    RuleSet,
    load_rules,
    parse_rule,
    propose_bash_rule,
    save_rule,
)
from dexter.permissions.shell_parse import ParsedCommand, Segment, parse_command
from dexter.sandbox.paths import Sandbox, sandbox_for
from dexter.sandbox.policy import Grants
from dexter.sandbox.runner import INSTALL_HINT, SandboxStatus

if TYPE_CHECKING:
    from dexter.config import Settings

FILE_WRITE_KEY = "file:write"
_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})
_FILE_TOOLS = {"write_file": "Write", "edit_file": "Edit"}


def _matches_words(rule: Rule, seg: Segment) -> bool:
    """Deny/ask matching: like allow matching, but also on segments not fully understood."""
    if rule.kind == "tool":
        return True
    relaxed = Segment(seg.words, seg.env, seg.wrappers, (), seg.operator, None)
    return rule.matches_segment(relaxed)


class RuleBasedPermissions:
    """The engine. Rules live in ``settings_path`` (``DEXTER_HOME/settings.json``)."""

    def __init__(self, cwd: Path, home: Path, settings_path: Path | None = None, *,
                 contained: SandboxStatus | None = None, auto_allow_sandboxed: bool = True,
                 writable: tuple[Path, ...] = (), allow_rules: bool = True) -> None:
        """``allow_rules``: False when the settings file's allow rules must not be used (it
        is not dexter's own writing and was not trusted: :mod:`dexter.config_trust`)."""
        self.sandbox: Sandbox = sandbox_for(cwd, home, writable if contained and contained.active else ())
        self.settings_path = settings_path or Path(home) / "settings.json"
        self.allow_rules = allow_rules
        self.rules: RuleSet = load_rules(self.settings_path, allow=allow_rules)
        self.shell_status = contained or SandboxStatus(False, "none", "no sandbox configured")
        self.auto_allow_sandboxed = auto_allow_sandboxed

    @property
    def contained(self) -> bool:
        """True when shell commands run inside the operating-system sandbox."""
        return self.shell_status.active

    @property
    def warnings(self) -> list[str]:
        """Problems found in the settings file (malformed rules, unreadable JSON)."""
        return list(self.rules.warnings)

    def reload(self) -> None:
        """Read the settings file again."""
        self.rules = load_rules(self.settings_path, allow=self.allow_rules)

    # -- PermissionEngine ------------------------------------------------------------

    def evaluate(self, tool_name: str, args: dict[str, Any], needs_approval: bool) -> PermissionDecision:
        """Decide one call. Any internal error is a denial (fail closed)."""
        try:
            if tool_name == "bash":
                return self.evaluate_bash(args.get("command"))
            if tool_name in _FILE_TOOLS:
                return self._evaluate_file(tool_name, args)
            if tool_name == "web_fetch":
                return self._evaluate_fetch(args)
            return self._evaluate_other(tool_name, needs_approval)
        except Exception as exc:
            return PermissionDecision("deny", f"The permission check failed ({exc}).",
                                      cacheable=False)

    def add_rule(self, kind: Behavior, rule: str) -> None:
        """Persist a rule to settings.json (atomically) and apply it now.

        Raises ``RuleError`` for a malformed rule and ``SettingsFileError`` when the file
        cannot be safely rewritten.
        """
        parsed = parse_rule(rule)
        save_rule(self.settings_path, kind, parsed)
        if parsed not in self.rules.of(kind):
            self.rules.of(kind).append(parsed)

    # -- bash ------------------------------------------------------------------------

    def evaluate_bash(self, command: Any, extra_allow: Sequence[Rule] = ()) -> PermissionDecision:
        """Decide one shell command (``extra_allow``: rules from ``--allow``)."""
        if not isinstance(command, str) or not command.strip():
            return PermissionDecision("deny", "bash needs a non-empty 'command' string.",
                                      cacheable=False)
        text = command.strip()
        key = f"bash:{text}"
        parsed = parse_command(text)
        floor = floor_reason(parsed, self.sandbox)
        if floor:
            return PermissionDecision("deny", f"Blocked by dexter's safety floor: {floor}.",
                                      session_key=key, cacheable=False)
        for rule in self.rules.for_tool("deny", "bash"):
            if any(_matches_words(rule, seg) for seg in parsed.segments):
                return PermissionDecision("deny", f"Denied by the rule {rule}.",
                                          session_key=key, cacheable=False)
        if self.contained:
            return self._evaluate_contained(parsed, key, extra_allow)
        warning = f"Not sandboxed: {self.shell_status.reason}. This command runs with your full rights."
        decision = self._evaluate_uncontained(parsed, key, extra_allow)
        if decision.behavior == "ask":
            return dataclasses.replace(decision, warning=warning)
        return decision

    def _evaluate_contained(self, parsed: ParsedCommand, key: str,
                            extra_allow: Sequence[Rule]) -> PermissionDecision:
        """The decision for a command that will run inside the sandbox."""
        needs = needed_grants(parsed, self.sandbox)
        for rule in self.rules.for_tool("ask", "bash"):
            if any(_matches_words(rule, seg) for seg in parsed.segments):
                return PermissionDecision("ask", f"The rule {rule} asks before this command.",
                                          session_key=key, grants=needs)
        allow_rules = [*self.rules.for_tool("allow", "bash"), *extra_allow]
        if parsed.ok and parsed.segments and all(
                any(r.matches_segment(seg) for r in allow_rules) for seg in parsed.segments):
            rule = next(r for r in allow_rules if r.matches_segment(parsed.segments[0]))
            return PermissionDecision("allow", f"Allowed by the rule {rule} (in the sandbox).",
                                      session_key=key, grants=needs)
        if needs:
            segment = parsed.segments[0] if parsed.ok and len(parsed.segments) == 1 else None
            proposed = str(propose_bash_rule(segment, read_only=False)) if segment else None
            return PermissionDecision(
                "ask", f"Needs approval: the command wants {needs.describe()}, which the "
                       "sandbox does not give by default.", session_key=key,
                proposed_rule=proposed, grants=needs)
        if self.auto_allow_sandboxed:
            return PermissionDecision("allow", "Runs in the sandbox (workspace only, no network).",
                                      session_key=key, grants=Grants())
        decision = self._evaluate_uncontained(parsed, key, extra_allow)
        return dataclasses.replace(decision, grants=Grants())

    def _evaluate_uncontained(self, parsed: ParsedCommand, key: str,
                              extra_allow: Sequence[Rule]) -> PermissionDecision:
        """The parser-only decision: read-only inside the workspace, or a rule, or ask."""
        if not parsed.ok:
            return PermissionDecision(
                "ask", f"Command needs review: the parser cannot fully follow it ({parsed.unknown}).",
                session_key=key, cacheable=False)
        for rule in self.rules.for_tool("ask", "bash"):
            if any(_matches_words(rule, seg) for seg in parsed.segments):
                return PermissionDecision("ask", f"The rule {rule} asks before this command.",
                                          session_key=key)
        allow_rules = [*self.rules.for_tool("allow", "bash"), *extra_allow]
        pending: list[tuple[Segment, str]] = []
        by_rule: list[Rule] = []
        moved = False  # after cd/pushd, relative paths no longer mean what the sandbox checked
        for seg in parsed.segments:
            matched = next((r for r in allow_rules if r.matches_segment(seg)), None)
            if matched is not None:
                by_rule.append(matched)
            elif moved:
                pending.append((seg, "it runs after a change of directory"))
            else:
                verdict = classify_segment(seg, self.sandbox)
                if not verdict.read_only:
                    pending.append((seg, verdict.reason))
            moved = moved or seg.base in _DIRECTORY_CHANGERS
        if not pending:
            why = (f"Allowed by the rule {by_rule[0]}." if by_rule
                   else "Read-only command inside the workspace.")
            return PermissionDecision("allow", why, session_key=key)
        proposed = str(propose_bash_rule(pending[0][0], read_only=False)) if len(pending) == 1 else None
        return PermissionDecision("ask", f"Needs approval: {pending[0][1]}.", session_key=key,
                                  proposed_rule=proposed)

    # -- other tools -----------------------------------------------------------------

    def _rule_decision(self, tool_name: str, key: str) -> PermissionDecision | None:
        for kind in ("deny", "ask", "allow"):
            rules = self.rules.for_tool(kind, tool_name)
            tool_wide = [r for r in rules if r.kind == "tool"]
            if tool_wide:
                return PermissionDecision(kind, f"Rule {tool_wide[0]} ({kind}).",
                                          session_key=key, cacheable=kind != "deny")
        return None

    def _evaluate_file(self, tool_name: str, args: Mapping[str, Any]) -> PermissionDecision:
        path = args.get("path")
        if isinstance(path, str):
            refused = self.sandbox.check(path, write=True)
            if refused:
                return PermissionDecision("deny", refused, session_key=FILE_WRITE_KEY,
                                          cacheable=False)
        decided = self._rule_decision(tool_name, FILE_WRITE_KEY)
        if decided is not None:
            return decided
        return PermissionDecision(
            "ask", f"{tool_name} changes files ({path if isinstance(path, str) else 'no path'}).",
            session_key=FILE_WRITE_KEY, proposed_rule=_FILE_TOOLS[tool_name])

    def _evaluate_fetch(self, args: Mapping[str, Any]) -> PermissionDecision:
        url = args.get("url")
        host = (urlsplit(url).hostname or "") if isinstance(url, str) else ""
        key = f"web_fetch:{host}"
        for kind in ("deny", "ask"):
            for rule in self.rules.for_tool(kind, "web_fetch"):
                if rule.matches_host(host):
                    return PermissionDecision(kind, f"Rule {rule} ({kind}).",
                                              session_key=key, cacheable=kind != "deny")
        return PermissionDecision("allow", "Fetching web pages is allowed.", session_key=key)

    def _evaluate_other(self, tool_name: str, needs_approval: bool) -> PermissionDecision:
        decided = self._rule_decision(tool_name, tool_name)
        if decided is not None:
            return decided
        if needs_approval:
            return PermissionDecision("ask", f"{tool_name} needs your approval.",
                                      session_key=tool_name, proposed_rule=tool_name)
        return PermissionDecision("allow", "Auto-approved.", session_key=tool_name)

    # -- non-interactive approvals ---------------------------------------------------

    def decide_noninteractive(self, tool_name: str, args: dict[str, Any], needs_approval: bool,
                              allow_list: Collection[str], yes: bool) -> PermissionDecision:
        """The final ``allow``/``deny`` for a run with no user (``dexter ask``).

        ``deny`` from the floor or a rule stays ``deny`` whatever ``--yes`` says; an ``ask``
        becomes ``allow`` only when ``--allow``/``--yes`` pre-approved it.
        """
        decision = self.evaluate(tool_name, args, needs_approval)
        if decision.behavior != "ask":
            return decision
        if tool_name == "bash" and yes and not self.contained and \
                not self.preapproved(tool_name, args, allow_list, False):
            return PermissionDecision(
                "deny", f"{decision.reason.rstrip('.')}. The shell is not sandboxed "
                        f"({self.shell_status.reason}), so --yes approves only commands the "
                        f"parser proves read-only. To run it, {INSTALL_HINT}; or allow it "
                        "explicitly with --allow '" + (decision.proposed_rule or "bash") + "'.",
                session_key=decision.session_key, cacheable=False)
        grants = decision.grants or Grants()
        outside = (*grants.read, *grants.write)
        if outside and yes and not self.preapproved(tool_name, args, allow_list, False):
            return PermissionDecision(
                "deny", f"The command uses paths outside the workspace ({', '.join(outside)}), "
                        "which --yes does not open: a command steered by fetched text could "
                        "send them anywhere. Add the folder to [bash] allow_read or allow_write, "
                        "or allow the command explicitly with --allow '"
                        + (decision.proposed_rule or "bash") + "'.",
                session_key=decision.session_key, cacheable=False)
        if self.preapproved(tool_name, args, allow_list, yes):
            return PermissionDecision("allow", "Pre-approved (--allow/--yes).",
                                      session_key=decision.session_key, grants=decision.grants)
        hint = f"--allow {tool_name}" + (f" or --allow '{decision.proposed_rule}'"
                                         if decision.proposed_rule else "")
        return PermissionDecision(
            "deny", f"{decision.reason.rstrip('.')}. No one is here to approve it; rerun with "
                    f"{hint} (or --yes) to allow it.", session_key=decision.session_key,
            cacheable=False)

    def preapproved(self, tool_name: str, args: Mapping[str, Any], allow_list: Collection[str],
                    yes: bool) -> bool:
        """Whether ``dexter ask --allow/--yes`` approves a call the engine said ``ask`` for.

        Call it only for ``ask`` decisions: ``deny`` (floor and deny rules) is final.
        ``allow_list`` holds tool names (``bash``, ``write_file``) or rule strings
        (``Bash(git log:*)``, ``Write``); a bash command is approved by rule strings only
        when every segment is covered by them or is read-only.
        """
        if yes:
            return True
        rules: list[Rule] = []
        for item in allow_list:
            try:
                rules.append(parse_rule(item))
            except RuleError:
                continue
        if any(r.kind == "tool" and r.covers(tool_name) for r in rules):
            return True
        if tool_name == "bash":
            extra = [r for r in rules if r.tool == "Bash"]
            return bool(extra) and self.evaluate_bash(args.get("command"), extra).behavior == "allow"
        if tool_name == "web_fetch":
            url = args.get("url")
            host = (urlsplit(url).hostname or "") if isinstance(url, str) else ""
            return any(r.tool == "WebFetch" and r.matches_host(host) for r in rules)
        return False


def allow_list_problems(allow_list: Collection[str], tool_names: Collection[str]) -> list[str]:
    """What is wrong with each ``--allow`` value (empty when every one is usable).

    A value is a tool name (``write_file``), a display name (``Write``, ``Bash``) or a rule
    (``Bash(git log:*)``, ``WebFetch(domain:sec.gov)``). A typo would otherwise be ignored
    and every matching call denied.
    """
    problems: list[str] = []
    known = ", ".join(sorted(tool_names))
    for item in allow_list:
        try:
            rule = parse_rule(item)
        except RuleError as exc:
            problems.append(f"--allow {item!r}: {exc}")
            continue
        if tool_names and not any(rule.covers(n) for n in tool_names) \
                and not rule.tool_name.startswith("mcp__"):  # a server that failed to start
            problems.append(f"--allow {item!r}: there is no tool {rule.tool!r}. Use a tool name "
                            f"({known}) or a rule such as 'Bash(git log:*)'.")
    return problems


def preapproved(tool_name: str, allow_list: Collection[str], yes: bool,
                args: Mapping[str, Any] | None = None,
                engine: RuleBasedPermissions | None = None) -> bool:
    """The non-interactive approver for ``ask`` decisions (see ``RuleBasedPermissions.preapproved``).

    Without an engine, bash rule strings are checked against a single-command line only.
    """
    if engine is not None:
        return engine.preapproved(tool_name, args or {}, allow_list, yes)
    if yes:
        return True
    for item in allow_list:
        try:
            rule = parse_rule(item)
        except RuleError:
            continue
        if rule.kind == "tool" and rule.covers(tool_name):
            return True
        if tool_name == "bash" and rule.tool == "Bash" and args:
            parsed = parse_command(str(args.get("command", "")))
            if parsed.ok and len(parsed.segments) == 1 and rule.matches_segment(parsed.segments[0]):
                return True
    return False


class NonInteractivePermissions:
    """The permission engine for a run with nobody to ask (``dexter ask``).

    Every ``ask`` becomes ``allow`` when ``--allow``/``--yes`` pre-approved it and ``deny``
    otherwise, with a reason that says which flag would allow it. ``deny`` decisions (the
    built-in floor and deny rules) stay ``deny`` whatever the flags say.
    """

    def __init__(self, engine: RuleBasedPermissions, allow: Sequence[str], yes: bool) -> None:
        self.engine = engine
        self.allow = [item.strip() for item in allow if item.strip()]
        self.yes = yes

    def evaluate(self, tool_name: str, args: dict[str, Any], needs_approval: bool) -> PermissionDecision:
        decision: PermissionDecision = self.engine.decide_noninteractive(
            tool_name, args, needs_approval, self.allow, self.yes)
        return decision

    def add_rule(self, kind: Behavior, rule: str) -> None:
        self.engine.add_rule(kind, rule)


def build_permission_engine(settings: Settings, cwd: Path | None = None,
                            shell_status: SandboxStatus | None = None) -> RuleBasedPermissions:
    """The engine for a run: rules from ``DEXTER_HOME/settings.json``, paths checked at
    ``cwd``; ``shell_status`` says whether commands run in the OS sandbox."""
    cwd = cwd or Path.cwd()
    writable = tuple(Path(os.path.realpath(cwd / Path(p).expanduser()))
                     for p in settings.bash.allow_write if p.strip())
    return RuleBasedPermissions(cwd, settings.home_path, contained=shell_status,
                                auto_allow_sandboxed=settings.bash.auto_allow_sandboxed,
                                writable=writable, allow_rules=settings.home_rules_trusted)


def noninteractive_engine(settings: Settings, cwd: Path, shell_status: SandboxStatus | None,
                          allow: Sequence[str], yes: bool) -> NonInteractivePermissions:
    """The engine for a run nobody can answer: ``--allow``/``--yes`` decide every ask."""
    return NonInteractivePermissions(build_permission_engine(settings, cwd, shell_status),
                                     allow, yes)
