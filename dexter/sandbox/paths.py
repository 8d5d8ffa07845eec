"""Where the file tools may go: the working directory and ``DEXTER_HOME``, minus secrets.

A user path is accepted only if it stays inside one of the roots lexically (no ``..`` or
absolute escape) *and* after every symlink is followed (no link in any component pointing
outside). Paths are NFC-normalised; the NFKC form (which folds look-alikes such as
fullwidth ``．．／`` into ``../``) must pass the same checks, so a look-alike can never
name something the plain form would not be allowed to. Secret files (``.env*``, key files,
``.ssh/``...) are refused everywhere, compared case-insensitively.

A regular file with more than one hard link is refused outside ``DEXTER_HOME``: a hard
link is a second name for data anywhere on the same file system (``~/.ssh/id_rsa``), and
no path check can see where the other name is.

Writes are refused additionally for ``DEXTER_HOME/settings.json`` (it holds the permission
rules: a model that could write it could grant itself anything), for the user state
folder's record of the settings files dexter wrote (it decides whether their rules are
used), and for anything inside a ``.git`` folder (hooks and config there run code on later
git commands).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from dexter.failures import ToolFailure

# Folder names whose whole content is secret.
SECRET_DIRS = frozenset({
    ".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".password-store",
})
# Exact file names that hold credentials.
SECRET_NAMES = frozenset({
    ".envrc", ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
    "credentials", ".vault-token", ".bash_history", ".zsh_history", ".sh_history",
    ".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
})
# Folders (as the end of a path, casefolded) that hold tokens without a telling file name.
SECRET_DIR_PATHS = (".config/gh", ".config/hub", ".config/gcloud", ".config/op",
                    ".local/share/keyrings")
# Glob patterns (matched against one casefolded path component).
SECRET_PATTERNS = (
    ".env", ".env.*", "credentials.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.ppk", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
)


class SandboxError(ToolFailure):
    """A path the file tools refuse; the message says why and what to do instead."""


_SECRET_NAME = re.compile("|".join(
    [*(re.escape(n) + r"\Z" for n in (*SECRET_DIRS, *SECRET_NAMES)),
     *(fnmatch.translate(p) for p in SECRET_PATTERNS)]))


def is_secret_name(component: str) -> bool:
    """True when one path component names a secret (what :func:`secret_component_reason`
    gives a reason for), in one regular-expression match: the workspace scan asks it of
    every name in the tree."""
    name = component if component.isascii() else unicodedata.normalize("NFKC", component)
    name = name.casefold().rstrip(" .") or component
    return _SECRET_NAME.match(name) is not None


def secret_component_reason(component: str) -> str | None:
    """Why one path component names a secret, or None. Case and look-alikes are folded."""
    name = unicodedata.normalize("NFKC", component).casefold().rstrip(" .") or component
    if name in SECRET_DIRS:
        return f"'{component}' is a folder of credentials"
    if name in SECRET_NAMES or any(fnmatch.fnmatchcase(name, p) for p in SECRET_PATTERNS):
        return f"'{component}' holds secrets (keys, tokens or passwords)"
    return None


def secret_path_reason(path: str) -> str | None:
    """Why a path (any of its components) names a secret, or None."""
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    for part in parts:
        if part != "..":
            reason = secret_component_reason(part)
            if reason:
                return reason
    folded = [unicodedata.normalize("NFKC", p).casefold() for p in parts]
    for i in range(len(folded) - 1):
        pair = f"{folded[i]}/{folded[i + 1]}"
        if pair in SECRET_DIR_PATHS:
            return f"'{parts[i]}/{parts[i + 1]}' holds login tokens"
    return None


@dataclass(frozen=True)
class Sandbox:
    """The allowed roots and the rules for resolving user paths inside them."""

    cwd: Path
    home: Path
    extra: tuple[Path, ...] = ()

    @property
    def roots(self) -> tuple[Path, ...]:
        """The real (symlink-free) allowed roots: working directory first, then
        ``DEXTER_HOME``, then extra folders (the shell's ``[bash] allow_write``)."""
        return tuple(dict.fromkeys(Path(os.path.realpath(p))
                                   for p in (self.cwd, self.home, *self.extra)))

    def resolve(self, user_path: str, *, write: bool = False) -> Path:
        """The real path for ``user_path``; raises ``SandboxError`` naming what is wrong."""
        reason, path = self._check(user_path, write=write)
        if reason is not None or path is None:
            raise SandboxError(reason or f"Cannot use path {user_path!r}.")
        return path

    def check(self, user_path: str, *, write: bool = False) -> str | None:
        """Why ``user_path`` is refused, or None when it is fine."""
        return self._check(user_path, write=write)[0]

    def contains(self, user_path: str) -> bool:
        """True when the path is inside a root lexically, after symlinks, and NFKC-folded."""
        if not user_path or "\x00" in user_path:
            return False
        for form in {unicodedata.normalize("NFC", user_path),
                     unicodedata.normalize("NFKC", user_path)}:
            lexical = self._lexical(form)
            if self._root_of(lexical) is None:
                return False
            if self._root_of(Path(os.path.realpath(lexical))) is None:
                return False
        return True

    def secret_target(self, user_path: str) -> str | None:
        """Why an existing path is, or links to, a secret file (e.g. a symlink to ``.env``)."""
        if not user_path or "\x00" in user_path:
            return None
        try:
            real = Path(os.path.realpath(self._lexical(unicodedata.normalize("NFC", user_path))))
        except (OSError, ValueError):
            return None
        root = self._root_of(real)
        return secret_path_reason(str(real.relative_to(root) if root else real))

    def write_protection(self, user_path: str) -> str | None:
        """Why writing this path is never allowed (settings.json, ``.git``), or None."""
        if not user_path or "\x00" in user_path:
            return None
        lexical = self._lexical(unicodedata.normalize("NFKC", user_path))
        return self._write_protection(Path(os.path.realpath(lexical)), lexical)

    def is_root(self, user_path: str) -> bool:
        """True when the path names one of the roots itself (the whole workspace)."""
        lexical = self._lexical(unicodedata.normalize("NFKC", user_path))
        return lexical in self.roots or Path(os.path.realpath(lexical)) in self.roots

    def display(self, path: Path) -> str:
        """A short form of an accepted path: relative to the working directory when inside."""
        cwd = Path(os.path.realpath(self.cwd))
        if path.is_relative_to(cwd):
            rel = path.relative_to(cwd)
            return str(rel) if str(rel) != "." else "."
        return str(path)

    # -- internals ---------------------------------------------------------------------

    def _check(self, user_path: str, *, write: bool) -> tuple[str | None, Path | None]:
        if not user_path or not user_path.strip():
            return "The path is empty. Give a file path relative to the working directory.", None
        if "\x00" in user_path:
            return "The path contains a NUL character.", None
        text = unicodedata.normalize("NFC", user_path)
        folded = unicodedata.normalize("NFKC", user_path)
        if folded != text:
            problem = self._lexical_problem(folded)
            if problem is not None:
                return (f"Refused {user_path!r}: with look-alike Unicode characters folded it "
                        f"reads {folded!r}, and {problem}"), None
        problem = self._lexical_problem(text)
        if problem is not None:
            return f"Refused {user_path!r}: {problem}", None
        lexical = self._lexical(text)
        real = Path(os.path.realpath(lexical))
        root = self._root_of(real)
        if root is None:
            return (f"Refused {user_path!r}: it is (or passes through) a symlink that points "
                    f"outside the allowed folders ({self._roots_text()})."), None
        secret = secret_path_reason(str(real.relative_to(root)))
        if secret:
            return f"Refused {user_path!r}: it resolves to a secret file ({secret}).", None
        links = _hard_links(real)
        if links > 1 and not real.is_relative_to(os.path.realpath(self.home)):
            return (f"Refused {user_path!r}: the file has {links} hard links, so the same "
                    "data also lives under another name, possibly outside the workspace. "
                    "Copy it to a new file first if it is meant to be read here."), None
        if write:
            protected = self._write_protection(real, lexical)
            if protected:
                return f"Refused to write {user_path!r}: {protected}", None
        return None, real

    def _lexical(self, text: str) -> Path:
        expanded = os.path.expanduser(text) if text.startswith("~") else text
        candidate = Path(expanded)
        if not candidate.is_absolute():
            candidate = Path(os.path.realpath(self.cwd)) / candidate
        lexical = Path(os.path.normpath(candidate))
        for alias in (self.cwd, self.home):
            plain, real = Path(os.path.abspath(alias)), Path(os.path.realpath(alias))
            if plain != real and lexical.is_relative_to(plain):
                return real / lexical.relative_to(plain)
        return lexical

    def _lexical_problem(self, text: str) -> str | None:
        lexical = self._lexical(text)
        root = self._root_of(lexical)
        if root is None:
            return f"it is outside the allowed folders ({self._roots_text()})."
        secret = secret_path_reason(str(lexical.relative_to(root)))
        if secret:
            return f"{secret}; dexter never reads or writes secret files."
        return None

    def _root_of(self, path: Path) -> Path | None:
        for root in self.roots:
            if path == root or path.is_relative_to(root):
                return root
        return None

    def _roots_text(self) -> str:
        return ", ".join(str(r) for r in self.roots)

    def _write_protection(self, real: Path, lexical: Path) -> str | None:
        # Compared casefolded, trailing dots and spaces dropped: on case-insensitive file
        # systems (macOS, Windows) `.DEXTER/Settings.json` and `.git./config` are the same files.
        settings = _loose(Path(os.path.realpath(self.home)) / "settings.json")
        if settings in (_loose(real), _loose(lexical)):
            return ("settings.json holds the permission rules and only changes through an "
                    "approval answered by the user.")
        from dexter.settings_file import own_record_path

        record = _loose(Path(os.path.realpath(own_record_path().parent)))
        if any(_loose(p) == record or _loose(p).startswith(record + "/") for p in (real, lexical)):
            return ("this folder holds dexter's record of which settings files it wrote, "
                    "which decides whether their permission rules are used.")
        for path in (real, lexical):
            root = self._root_of(path)
            if root is not None and ".git" in _loose(path.relative_to(root)).split("/"):
                return "files inside .git are never written by tools (hooks and config run code)."
        return None


def _hard_links(path: Path) -> int:
    """How many names a regular file has (1 for folders, missing files and others)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 1
    return st.st_nlink if stat.S_ISREG(st.st_mode) else 1


def _loose(path: Path) -> str:
    """A path as a case-insensitive file system compares it."""
    return "/".join(unicodedata.normalize("NFKC", part).casefold().rstrip(" .") or part
                    for part in path.as_posix().split("/"))


def sandbox_for(cwd: Path, home: Path, extra: tuple[Path, ...] = ()) -> Sandbox:
    """The sandbox for a working directory and a ``DEXTER_HOME`` (plus ``extra`` roots)."""
    return Sandbox(cwd=Path(cwd), home=Path(home), extra=tuple(Path(p) for p in extra))
