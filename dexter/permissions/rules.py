"""Permission rules: grammar, matching, and their home in ``DEXTER_HOME/settings.json``.

Grammar (one string per rule)::

    Bash                    every shell command (tool-wide; also written Bash(:*))
    Bash(git status)        exactly this command (first word compared by basename)
    Bash(git log:*)         commands whose words start with these words
    Write / Edit / Read     write_file / edit_file / read_file, tool-wide
    WebFetch                web_fetch, tool-wide
    WebFetch(domain:x.com)  web_fetch of x.com or any subdomain
    web_search              any other tool, by its tool name, tool-wide

Inside the parentheses ``\\(``, ``\\)`` and ``\\\\`` escape parentheses and backslashes; words
are split like the shell (quotes group). Rules are written back from their parsed form, so
``parse_rule(str(rule)) == rule``. Bash rules match the command after wrappers
(``timeout``, ``nice``, ``env``...) and leading ``NAME=value`` words are removed.

The file holds ``{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}`` next to
any other keys, which are preserved when a rule is added. Malformed rules are reported in
``RuleSet.warnings``, never silently dropped.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dexter.permissions.base import Behavior
from dexter.permissions.shell_parse import Segment, parse_command
from dexter.settings_file import SettingsFileError, read_settings_file, update_settings_file

RuleKind = Literal["tool", "exact", "prefix", "domain"]

# Display name <-> tool name for the tools rules usually name.
DISPLAY_TO_TOOL = {
    "Bash": "bash", "Write": "write_file", "Edit": "edit_file", "Read": "read_file",
    "WebFetch": "web_fetch", "WebSearch": "web_search",
}
TOOL_TO_DISPLAY = {tool: display for display, tool in DISPLAY_TO_TOOL.items()}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")  # MCP server names may hold '-'
MCP_PREFIX = "mcp__"
_HOST = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*"
                   r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


class RuleError(ValueError):
    """A rule string that does not follow the grammar; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule. ``tool`` is the display name (``Bash``) or a plain tool name."""

    tool: str
    kind: RuleKind = "tool"
    words: tuple[str, ...] = ()
    domain: str = ""

    @property
    def tool_name(self) -> str:
        """The tool this rule is about, as registered (``bash``, ``write_file``...)."""
        return DISPLAY_TO_TOOL.get(self.tool, self.tool)

    def __str__(self) -> str:
        return serialise_rule(self)

    def covers(self, tool_name: str) -> bool:
        """Whether this rule is about ``tool_name``: its name, or an MCP server's prefix
        (``mcp__prices`` covers every ``mcp__prices__TOOL``)."""
        name = self.tool_name
        if name == tool_name:
            return True
        return (name.startswith(MCP_PREFIX) and "__" not in name[len(MCP_PREFIX):]
                and tool_name.startswith(name + "__"))

    def matches_segment(self, seg: Segment) -> bool:
        """True when this Bash rule covers one simple command."""
        if self.tool != "Bash":
            return False
        if self.kind == "tool":
            return True
        if not seg.words or seg.unknown or seg.writes_file:
            return False
        if not _same_command(self.words[0], seg.words[0]):
            return False
        rest, wanted = seg.words[1:], self.words[1:]
        if self.kind == "exact":
            return rest == wanted
        return rest[:len(wanted)] == wanted

    def matches_host(self, host: str) -> bool:
        """True when this WebFetch rule covers a host."""
        if self.tool != "WebFetch":
            return False
        if self.kind == "tool":
            return True
        host = host.lower().rstrip(".")
        return host == self.domain or host.endswith("." + self.domain)


_SYSTEM_BIN = ("/usr/bin/", "/bin/", "/usr/local/bin/")


def _same_command(rule_word: str, word: str) -> bool:
    """A rule's bare name also covers the same program named from a system bin folder."""
    if rule_word == word:
        return True
    return "/" not in rule_word and any(word == d + rule_word for d in _SYSTEM_BIN)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "\\()":
            out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def serialise_rule(rule: Rule) -> str:
    """The canonical string of a rule."""
    if rule.kind == "tool":
        return rule.tool
    if rule.kind == "domain":
        return f"{rule.tool}(domain:{rule.domain})"
    body = shlex.join(rule.words)
    return f"{rule.tool}({_escape(body)}{':*' if rule.kind == 'prefix' else ''})"


def _split_call(text: str) -> tuple[str, str | None]:
    text = text.strip()
    if "(" not in text:
        if ")" in text:
            raise RuleError(f"Rule {text!r} has ')' without '('.")
        return text, None
    name, _, rest = text.partition("(")
    depth, i = 1, 0
    while i < len(rest):
        ch = rest[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                if rest[i + 1:].strip():
                    raise RuleError(f"Rule {text!r} has text after the closing ')'.")
                return name.strip(), rest[:i]
        i += 1
    raise RuleError(f"Rule {text!r} is missing its closing ')'.")


def parse_rule(text: str) -> Rule:
    """Parse one rule string; raises ``RuleError`` with a fix-it message."""
    if not isinstance(text, str) or not text.strip():
        raise RuleError("A rule must be a non-empty string such as 'Bash(git status)'.")
    name, body = _split_call(text)
    if not _NAME.match(name):
        raise RuleError(f"Rule {text!r}: {name!r} is not a tool name (e.g. Bash, Write, "
                        "WebFetch, web_search).")
    display = TOOL_TO_DISPLAY.get(name, name)
    if body is None:
        return Rule(display)
    content = _unescape(body).strip()
    if display == "Bash":
        return _parse_bash(text, content)
    if display == "WebFetch":
        if not content.startswith("domain:"):
            raise RuleError(f"Rule {text!r}: WebFetch takes 'domain:example.com'.")
        domain = content[len("domain:"):].strip().lower().rstrip(".")
        if domain.startswith("*."):
            domain = domain[2:]
        if not _HOST.match(domain):
            raise RuleError(f"Rule {text!r}: {domain!r} is not a domain name.")
        return Rule(display, "domain", domain=domain)
    raise RuleError(f"Rule {text!r}: {display} rules take no argument; write just '{display}'.")


def _parse_bash(text: str, content: str) -> Rule:
    prefix = content.endswith(":*")
    command = content[:-2].strip() if prefix else content
    if prefix and not command:
        return Rule("Bash")
    if not command:
        raise RuleError(f"Rule {text!r} is empty; write 'Bash' for every command or "
                        "'Bash(cmd)' for one.")
    parsed = parse_command(command)
    if not parsed.ok or len(parsed.segments) != 1:
        why = parsed.unknown or "more than one command"
        raise RuleError(f"Rule {text!r}: a Bash rule names one simple command ({why}). "
                        "Only a trailing ':*' wildcard is supported.")
    seg = parsed.segments[0]
    if seg.env or seg.wrappers or seg.redirects or not seg.words:
        raise RuleError(f"Rule {text!r}: write the command without assignments, wrappers "
                        "or redirections.")
    return Rule("Bash", "prefix" if prefix else "exact", tuple(seg.words))


@dataclass
class RuleSet:
    """Rules by behaviour, plus warnings about entries that could not be used."""

    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of(self, kind: Behavior) -> list[Rule]:
        """The rules of one behaviour."""
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}[kind]

    def for_tool(self, kind: Behavior, tool_name: str) -> list[Rule]:
        """The rules of one behaviour about one tool (by tool name)."""
        return [r for r in self.of(kind) if r.covers(tool_name)]

    def to_dict(self) -> dict[str, list[str]]:
        """The ``permissions`` object as written to settings.json."""
        return {kind: [str(r) for r in self.of(kind)] for kind in ("allow", "ask", "deny")}


def rules_from_dict(data: Any, source: str = "settings.json") -> RuleSet:
    """Parse a ``permissions`` object; bad entries become warnings."""
    rules = RuleSet()
    if data is None:
        return rules
    if not isinstance(data, dict):
        rules.warnings.append(f"{source}: 'permissions' must be an object with allow/ask/deny "
                              "lists; ignored.")
        return rules
    for kind in ("allow", "ask", "deny"):
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            rules.warnings.append(f"{source}: permissions.{kind} must be a list of strings.")
            continue
        for entry in entries:
            try:
                rule = parse_rule(entry)
            except RuleError as exc:
                rules.warnings.append(f"{source}: permissions.{kind}: {exc}")
                continue
            if rule not in rules.of(kind):
                rules.of(kind).append(rule)
    for key in data:
        if key not in {"allow", "ask", "deny"}:
            rules.warnings.append(f"{source}: unknown key permissions.{key} ignored.")
    return rules


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object (empty when the file does not exist)."""
    try:
        return read_settings_file(path)
    except SettingsFileError as exc:
        raise SettingsFileError(f"{path} is not readable JSON ({exc}) Fix or move it; "
                                "permission rules in it are not in effect.") from None


def load_rules(path: Path, *, allow: bool = True) -> RuleSet:
    """The rules in a settings file; problems become warnings (the file is never changed).
    ``allow=False`` leaves out its allow rules (deny and ask rules only narrow)."""
    try:
        data = read_settings(path)
    except SettingsFileError as exc:
        return RuleSet(warnings=[str(exc)])
    rules = rules_from_dict(data.get("permissions"), str(path))
    if not allow:
        rules.allow.clear()
    return rules


def save_rule(path: Path, kind: Behavior, rule: Rule) -> None:
    """Add a rule to the settings file atomically, keeping every other key."""

    def add(data: dict[str, Any]) -> None:
        permissions = data.get("permissions")
        if permissions is None:
            permissions = data["permissions"] = {}
        if not isinstance(permissions, dict):
            raise SettingsFileError(f"{path}: 'permissions' is not an object; fix it by hand first.")
        entries = permissions.setdefault(kind, [])
        if not isinstance(entries, list):
            raise SettingsFileError(f"{path}: permissions.{kind} is not a list; fix it by hand first.")
        if str(rule) not in entries:
            entries.append(str(rule))

    update_settings_file(path, add)


def propose_bash_rule(seg: Segment, read_only: bool) -> Rule:
    """The rule an "always allow" answer saves: a prefix for read-only, exact otherwise."""
    if read_only:
        sub = [w for w in seg.args if not w.startswith("-")][:1]
        multi = {"git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "gh", "pip",
                 "pip3", "uv", "poetry"}
        base = os.path.basename(seg.command)
        words = (seg.command, *sub) if base in multi and sub else (seg.command,)
        return Rule("Bash", "prefix", words)
    return Rule("Bash", "exact", seg.words)
