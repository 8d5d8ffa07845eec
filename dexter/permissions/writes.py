"""Where a simple command writes: output options, in-place edits, links and directory changes.

The deny floor (:mod:`floor`) refuses a command when one of these paths lands outside the
workspace, whatever ``--yes`` says. Reading the tables below errs on the side of *more*
paths: an operand that is really a pattern or a URL resolves inside the workspace (a
relative name) or is refused as outside (an absolute one), which at worst asks the user to
run the command by hand.

Covered: ``touch``, ``mkdir``, ``mkfifo``, ``mknod``; ``sed -i`` and ``perl -i``; ``curl``
and ``wget`` output options; ``tar`` (the archive it creates, the folder it extracts to),
``unzip -d``; ``gzip``-style compressors that replace their operands; ``git clone``/``init``/
``worktree add`` folders, ``git --output``, ``format-patch -o``, ``archive -o`` and
``-C``/``--git-dir``/``--work-tree`` for commands that change a repository; ``patch``;
``split``/``csplit`` prefixes; ``sort -o``; ``uniq IN OUT``; ``tree -o``; ``find -fprint``;
``make -C``; ``ln`` and ``cp -l``/``cp -s`` (every operand: a link to an outside file is a
way to write it later).
"""

from __future__ import annotations

from collections.abc import Iterable

from dexter.permissions.classify import operands
from dexter.permissions.shell_parse import Segment

_COMPRESSORS = frozenset({
    "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd",
    "lz4", "unlz4", "compress", "uncompress", "pigz", "unpigz", "lzip", "brotli",
})
_TO_STDOUT = frozenset({"-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list"})
_GIT_READ_SUBCOMMANDS = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "shortlog", "describe",
    "ls-tree", "cat-file", "grep", "rev-list", "name-rev", "whatchanged", "annotate",
    "merge-base", "count-objects", "show-ref", "for-each-ref", "cherry", "branch", "tag",
    "reflog", "remote", "config",
})


def option_values(args: Iterable[str], shorts: str = "", longs: Iterable[str] = ()) -> list[str]:
    """Values given to the named options: ``-o V``, ``-oV``, ``-sSo V``, ``--out V``, ``--out=V``."""
    words = list(args)
    long_names = tuple(longs)
    values: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if word == "--":
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in long_names:
                if eq:
                    values.append(value)
                elif nxt is not None:
                    values.append(nxt)
                    i += 1
        elif word.startswith("-") and len(word) > 1:
            for j, letter in enumerate(word[1:], start=1):
                if letter in shorts:
                    rest = word[j + 1:]
                    if rest:
                        values.append(rest)
                    elif nxt is not None:
                        values.append(nxt)
                        i += 1
                    break
        i += 1
    return values


def _has_short(args: Iterable[str], letter: str) -> bool:
    return any(a.startswith("-") and not a.startswith("--") and letter in a[1:] for a in args)


def _operands_without(args: tuple[str, ...], shorts: str, longs: Iterable[str] = ()) -> list[str]:
    """Operands once the values of value-taking options are removed."""
    long_names = tuple(longs)
    out: list[str] = []
    skip = False
    after_dashes = False
    for arg in args:
        if skip:
            skip = False
            continue
        if after_dashes or not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg == "--":
            after_dashes = True
        elif arg.startswith("--"):
            skip = "=" not in arg and arg in long_names
        elif arg[-1] in shorts and not any(ch in shorts for ch in arg[1:-1]):
            skip = True
    return out


def _sed_targets(args: tuple[str, ...]) -> list[str]:
    in_place = _long_flag(args, "--in-place") or any(
        a.startswith("-") and not a.startswith("--") and "i" in a[1:].split("e")[0] for a in args)
    if not in_place:
        return []
    files = _operands_without(args, "efl", ("--expression", "--file", "--line-length"))
    has_script_option = bool(option_values(args, "ef", ("--expression", "--file")))
    return files if has_script_option else files[1:]


def _perl_targets(args: tuple[str, ...]) -> list[str]:
    if not any(a.startswith("-") and not a.startswith("--") and "i" in a[1:] for a in args):
        return []
    files = _operands_without(args, "eEMIm")
    return files if option_values(args, "eE") else files[1:]


def _long_flag(args: Iterable[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in args)


def _tar_targets(args: tuple[str, ...]) -> list[str]:
    words = list(args)
    if words and not words[0].startswith("-"):
        letters, rest = words[0], words[1:]
        values = iter(rest)
        old: dict[str, str] = {}
        for letter in letters:
            if letter in "fCbTXgKNVH":
                old[letter] = next(values, "")
        words = [f"-{letters}", *rest]
        archive, folder = old.get("f", ""), old.get("C", "")
    else:
        archive = next(iter(option_values(words, "f", ("--file",))), "")
        folder = ""
    folders = [folder] if folder else []
    folders += option_values(words, "C", ("--directory",))
    extract = _has_short(words, "x") or any(a in {"--extract", "--get"} for a in words)
    create = any(_has_short(words, ch) for ch in "cruA") or any(
        a in {"--create", "--append", "--update", "--catenate", "--concatenate"} for a in words)
    targets: list[str] = []
    if extract:
        targets += folders
        if _has_short(words, "P") or "--absolute-names" in words:
            targets.append("/")
    if create and archive and archive != "-":
        targets.append(archive)
    return targets


def _git_targets(args: tuple[str, ...]) -> list[str]:
    words = list(args)
    places: list[str] = []
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in {"-C", "--git-dir", "--work-tree"} and words:
            places.append(words.pop(0))
        elif option.startswith(("--git-dir=", "--work-tree=")):
            places.append(option.split("=", 1)[1])
        elif option == "-c" and words:
            words.pop(0)
    if not words:
        return []
    sub, rest = words[0], tuple(words[1:])
    targets = option_values(rest, "", ("--output", "--output-directory"))
    if sub in {"format-patch", "archive"}:
        targets += option_values(rest, "o", ())
    names = _operands_without(rest, "bocju", ("--branch", "--origin", "--config", "--depth",
                                               "--reference", "--separate-git-dir",
                                               "--template", "--upload-pack", "--jobs"))
    if sub == "clone" and len(names) >= 2:
        targets.append(names[-1])
    if sub == "init" and names:
        targets.append(names[-1])
    if sub == "worktree" and names[:1] == ["add"] and len(names) >= 2:
        targets.append(names[1])
    if sub == "bundle" and names[:1] == ["create"] and len(names) >= 2:
        targets.append(names[1])
    if sub not in _GIT_READ_SUBCOMMANDS:
        targets += places
    return targets


def _split_targets(base: str, args: tuple[str, ...]) -> list[str]:
    if base == "csplit":
        return option_values(args, "f", ("--prefix",))
    names = _operands_without(args, "lbCnat", ("--lines", "--bytes", "--line-bytes",
                                               "--number", "--suffix-length",
                                               "--additional-suffix", "--separator"))
    return names[1:2]


def write_targets(seg: Segment) -> list[str]:
    """Paths this command would create, change, replace or link to (best effort)."""
    base, args = seg.base, seg.args
    if base in {"touch"}:
        return _operands_without(args, "dtr", ("--date", "--reference"))
    if base in {"mkdir", "mkfifo", "mknod"}:
        return _operands_without(args, "mZ", ("--mode", "--context"))
    if base == "sed":
        return _sed_targets(args)
    if base == "perl":
        return _perl_targets(args)
    if base == "curl":
        return option_values(args, "oDc", ("--output", "--output-dir", "--dump-header",
                                           "--cookie-jar", "--trace", "--trace-ascii",
                                           "--stderr", "--etag-save", "--hsts", "--alt-svc",
                                           "--libcurl"))
    if base == "wget":
        return option_values(args, "OPoa", ("--output-document", "--directory-prefix",
                                            "--output-file", "--append-output",
                                            "--save-cookies", "--warc-file"))
    if base == "tar":
        return _tar_targets(args)
    if base == "unzip":
        return option_values(args, "d", ()) + (["/"] if "-:" in args else [])
    if base in _COMPRESSORS:
        if any(a in _TO_STDOUT for a in args) or _has_short(args, "c"):
            return option_values(args, "o", ("--output",))
        return operands(args) + option_values(args, "o", ("--output",))
    if base == "git":
        return _git_targets(args)
    if base == "patch":
        names = _operands_without(args, "oidrBpFDz", ("--output", "--input", "--directory",
                                                       "--reject-file", "--prefix"))
        return names[:1] + option_values(args, "odr", ("--output", "--directory",
                                                       "--reject-file"))
    if base in {"split", "csplit"}:
        return _split_targets(base, args)
    if base == "sort":
        return option_values(args, "o", ("--output",))
    if base == "uniq":
        return _operands_without(args, "fsw", ("--skip-fields", "--skip-chars",
                                               "--check-chars"))[1:2]
    if base == "tree":
        return option_values(args, "o", ())
    if base == "find":
        return [args[i + 1] for i, a in enumerate(args[:-1])
                if a in {"-fprint", "-fprint0", "-fprintf", "-fls"}]
    if base == "make":
        return option_values(args, "C", ("--directory",))
    if base == "ln":
        return _operands_without(args, "St", ("--suffix", "--target-directory")) + \
            option_values(args, "t", ("--target-directory",))
    if base == "cp" and (_has_short(args, "l") or _has_short(args, "s")
                         or any(a in {"--link", "--symbolic-link"} for a in args)):
        return _operands_without(args, "tS", ("--target-directory", "--suffix"))
    return []


def directory_change(seg: Segment) -> tuple[bool, str | None]:
    """(changes directory, new directory as written or None when it cannot be known)."""
    if seg.base in {"cd", "pushd"}:
        names = [a for a in seg.args if not a.startswith("-") or a == "-"]
        if not names or names[0] == "-" or any(ch in names[0] for ch in "$`"):
            return True, None
        return True, names[0]
    if seg.base == "popd":
        return True, None
    return False, None
