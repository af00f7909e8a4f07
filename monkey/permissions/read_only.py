"""Commands that only read: allowed without asking in every mode (only a deny rule beats them).

A simple command is read-only when its program is in the built-in table below and none of
its arguments is one of that program's flags that write, execute another program, load a
configuration or pre-processor of someone's choosing, or change the system. The table is
deliberately small and conservative: anything it cannot check (a flag it does not know where
flags matter, an argument only known at run time, a sed script it cannot read) is not
read-only, and a person is asked as before.

What the other agents taught (their lists were read, not copied): Codex's ``is_safe_command``
excludes find's exec/delete/file-printing actions, rg's ``--pre``/``--search-zip``/
``--hostname-bin``, git's ``-c``/``--config-env``/``--output``/``--ext-diff``/``--textconv``/
``--exec``/``--paginate`` and every ``git branch`` form but listing, base64's ``-o``, and only
``sed -n Np``; it was bitten by a basename-only match (``./cat`` is not ``cat``, openai/codex#28732,
#37078), by pager-forcing global options (#18694) and by backslash-escaped words (#20277).
GNU tools accept any unambiguous prefix of a long option (``sort --out=x`` is ``--output``), so
a dangerous long option is refused by its prefixes too.

Users add their own read-only commands as argv prefixes (``[approvals] read_only_extra =
["make -n", "mytool"]``) or turn the table off (``read_only = false``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from monkey.permissions.sed_script import only_reads
from monkey.permissions.shell_parse import Origin, ParsedLine, parse_line

__all__ = ["ReadOnly", "is_read_only", "names_unsafe_form", "reads_denied", "rule_covers"]

ANY_ARGUMENTS = frozenset(
    "cat ls pwd echo printf head tail wc nl rev tac seq tr cut paste fold fmt column join expand unexpand comm"
    " cmp diff grep egrep fgrep stat which whereis type du df basename dirname realpath readlink whoami id groups"
    " uname nproc arch true false test [ cd printenv md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum"
    " cksum sum od hexdump strings jq expr factor numfmt sleep ps free uptime tty locale".split()
)
"""Programs none of whose arguments writes, runs another program or changes the system."""

SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
"""A program named by a full path counts as the table's program only from one of these
(``./cat`` or ``tmp/cat`` may be anything the model wrote)."""


def _long(arg: str, dangerous: Iterable[str], exact_ok: Iterable[str] = ()) -> bool:
    """``arg`` is one of the ``dangerous`` long options, or an abbreviation of one (``--out`` -> ``--output``)."""
    if not arg.startswith("--") or len(arg) < 3:
        return False
    name = arg.split("=", 1)[0]
    return name not in exact_ok and any(d.startswith(name) for d in dangerous)


def _short_cluster(arg: str) -> str:
    """The letters of a short-option cluster (``-nE`` -> ``nE``), or "" for anything else."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1 else ""


def _cluster_has(arg: str, letters: str, takes_value: str) -> bool:
    """A short cluster sets one of ``letters`` before a letter that takes the rest as its value."""
    for ch in _short_cluster(arg):
        if ch in letters:
            return True
        if ch in takes_value:
            return False
    return False


def _positionals(args: Sequence[str], takes_value: Iterable[str]) -> int:
    """How many operands ``args`` has, skipping options and the values of ``takes_value`` options."""
    values = set(takes_value)
    count, i = 0, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return count + len(args) - i - 1
        if arg.startswith("-") and arg != "-":
            i += 2 if arg in values else 1
            continue
        count += 1
        i += 1
    return count


def _find(args: list[str]) -> bool:
    actions = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}
    return not any(a in actions for a in args)


def _rg(args: list[str]) -> bool:
    dangerous = ("--pre", "--pre-glob", "--search-zip", "--hostname-bin")
    return not any(_long(a, dangerous) or _cluster_has(a, "z", "ABCefgjmMrtTEd") for a in args)


def _sort(args: list[str]) -> bool:
    return not any(_long(a, ("--output", "--compress-program")) or _cluster_has(a, "o", "ktST") for a in args)


def _uniq(args: list[str]) -> bool:
    return _positionals(args, ("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars")) <= 1


def _xxd(args: list[str]) -> bool:
    values = ("-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name")
    return _positionals(args, values) <= 1  # a second operand is the file xxd writes


def _tree(args: list[str]) -> bool:
    return not any(a.startswith("-o") or a == "-R" or _long(a, ("--output",)) for a in args)


def _base64(args: list[str]) -> bool:
    return not any(_long(a, ("--output",)) or _cluster_has(a, "o", "w") for a in args)


def _file(args: list[str]) -> bool:
    return not any(_long(a, ("--compile",)) or _cluster_has(a, "C", "efFmP") for a in args)


def _date(args: list[str]) -> bool:
    takes_value = {"-d", "-f", "-r", "--date", "--file", "--reference"}
    i = 0
    while i < len(args):
        arg = args[i]
        if _long(arg, ("--set",)) or _cluster_has(arg, "s", "dfr"):
            return False
        if arg in takes_value:
            i += 2
            continue
        if not arg.startswith(("-", "+")):
            return False  # date MMDDhhmm sets the clock
        i += 1
    return True


def _env(args: list[str]) -> bool:
    return not args  # env alone prints the environment; with arguments it runs something


def _command(args: list[str]) -> bool:
    return any(_cluster_has(a, "vV", "") for a in args)  # command -v NAME looks a name up


def _sed(args: list[str]) -> bool:
    """Only sed that writes nothing: no -i, no script file, and scripts made of commands it can read."""
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            name, _, value = arg.partition("=")
            if _long(name, ("--in-place", "--file")):
                return False
            if _long(name, ("--expression",)):
                if not value and "=" not in arg:
                    if i >= len(args):
                        return False
                    value, i = args[i], i + 1
                scripts.append(value)
            elif _long(name, ("--line-length",)):
                i += 0 if "=" in arg else 1
            elif not _long(
                name,
                (
                    "--quiet",
                    "--silent",
                    "--regexp-extended",
                    "--separate",
                    "--unbuffered",
                    "--null-data",
                    "--posix",
                    "--debug",
                    "--sandbox",
                ),
            ):
                return False
            continue
        cluster = _short_cluster(arg)
        if not cluster:
            operands.append(arg)
            continue
        for k, ch in enumerate(cluster):
            if ch in "nErsuz":
                continue
            if ch in "el":
                value = cluster[k + 1 :]
                if not value:
                    if i >= len(args):
                        return False
                    value, i = args[i], i + 1
                if ch == "e":
                    scripts.append(value)
                break
            return False  # -i (in place), -f (a script file), or a flag this check does not know
    if not scripts:
        if not operands:
            return False
        scripts.append(operands[0])
    return all(only_reads(s) for s in scripts)


_GIT_GLOBAL_FLAGS = frozenset(
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs"
    " --no-replace-objects --no-lazy-fetch --no-advice".split()
)
"""Options before git's subcommand that change nothing it runs (``-c``, ``--config-env``,
``--exec-path``, ``--git-dir``, ``--work-tree`` and ``-p``/``--paginate`` are refused)."""
_GIT_DANGEROUS = (
    "--output",
    "--ext-diff",
    "--textconv",
    "--filters",
    "--exec",
    "--exec-path",
    "--upload-pack",
    "--receive-pack",
    "--open-files-in-pager",
    "--paginate",
    "--edit",
)
_GIT_ANY = frozenset(
    "status diff log show shortlog whatchanged diff-tree diff-files diff-index rev-list rev-parse blame annotate"
    " ls-files ls-tree cat-file describe merge-base show-ref for-each-ref name-rev count-objects check-ignore"
    " check-attr var version grep cherry show-branch".split()
)
"""Subcommands that only read, whatever their (non-dangerous) arguments."""


def _git_listing(args: list[str], flags: set[str], value_flags: set[str]) -> bool:
    """``git branch`` / ``git tag`` in a listing form only: known flags, and patterns only after --list."""
    listing = False
    positionals = 0
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg in ("-l", "--list"):
            listing = True
        elif name in value_flags:
            i += 1 if "=" in arg else 2
            continue
        elif (
            arg in flags
            or name in ("--sort", "--format", "--color", "--column")
            or (arg.startswith("-n") and arg[2:].isdigit())
        ):
            pass
        elif arg.startswith("-"):
            return False  # -d, -D, -m, -c, -f, --set-upstream-to ...: changes branches or tags
        else:
            positionals += 1
        i += 1
    return positionals == 0 or listing


def _git_config(args: list[str]) -> bool:
    if args[:1] in (["get"], ["list"]):
        return True
    getters = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
    harmless = {
        "--local",
        "--global",
        "--system",
        "--worktree",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "--null",
        "-z",
        "--includes",
        "--no-includes",
        "--bool",
        "--int",
        "--path",
    }
    ok = any(a in getters for a in args)
    for a in args:
        if a.startswith("-") and a not in getters and a not in harmless and not a.startswith(("--type=", "--default=")):
            return False
    return ok


def _git(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C":
            i += 2
        elif args[i] in _GIT_GLOBAL_FLAGS:
            i += 1
        else:
            return args == ["--version"]
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1 :]
    if any(
        _long(a, _GIT_DANGEROUS, exact_ok=("--text",)) or (sub == "grep" and _cluster_has(a, "O", "")) for a in rest
    ):
        return False
    if sub in _GIT_ANY:
        return True
    if sub == "branch":
        return _git_listing(
            rest,
            {
                "-a",
                "--all",
                "-r",
                "--remotes",
                "-v",
                "-vv",
                "--verbose",
                "--show-current",
                "-i",
                "--ignore-case",
                "--no-color",
                "--omit-empty",
            },
            {"--merged", "--no-merged", "--contains", "--no-contains", "--points-at", "--sort", "--format"},
        )
    if sub == "tag":
        return _git_listing(
            rest,
            {"-i", "--ignore-case", "--no-color", "--omit-empty"},
            {"--merged", "--no-merged", "--contains", "--no-contains", "--points-at", "--sort", "--format"},
        )
    if sub == "remote":
        return rest in ([], ["-v"], ["--verbose"]) or (rest[:1] == ["get-url"] and len(rest) <= 4)
    if sub == "config":
        return _git_config(rest)
    if sub in ("stash", "worktree"):
        return bool(rest) and rest[0] in (("list", "show") if sub == "stash" else ("list",))
    if sub == "reflog":
        return not rest or rest[0] in ("show", "list", "exists")
    if sub == "symbolic-ref":
        return not any(a.startswith("-") and a not in ("-q", "--quiet", "--short") for a in rest) and len(rest) <= 1
    return False


FLAG_CHECKED: dict[str, Callable[[list[str]], bool]] = {
    "find": _find,
    "rg": _rg,
    "sort": _sort,
    "uniq": _uniq,
    "xxd": _xxd,
    "tree": _tree,
    "base64": _base64,
    "base32": _base64,
    "basenc": _base64,
    "file": _file,
    "date": _date,
    "env": _env,
    "command": _command,
    "sed": _sed,
    "git": _git,
}
"""Programs that read unless some of their arguments say otherwise: the check says whether they do."""


def is_read_only(argv: Sequence[str], *, more_arguments: bool = False) -> bool:
    """Whether the built-in table calls ``argv`` read-only.

    ``more_arguments``: the command gets arguments the check cannot see (under ``xargs``), so
    only programs none of whose arguments matter qualify. An argument only known at run time
    (``"\\0dynamic"``: a variable, a glob) counts the same way.
    """
    if not argv:
        return False
    name = argv[0]
    if name in ANY_ARGUMENTS:
        return True
    check = FLAG_CHECKED.get(name)
    if check is None or more_arguments or any("\0" in a for a in argv[1:]):
        return False
    return check(list(argv[1:]))


_COMPLETIONS: dict[str, list[str]] = {"sed": ["p"], "git": ["status"], "rg": ["x"], "command": ["-v"]}
"""What makes a rule's words a whole command that only reads, when they are (``sed -n`` + ``p``,
``git`` + ``status``); a rule whose words stay unsafe then names an unsafe form itself."""


def names_unsafe_form(prefix: Sequence[str]) -> bool:
    """Whether a rule's words name one of their program's writing or executing forms themselves
    (``sed -i``, ``find . -delete``, ``git config``, ``git -c``, ``sort -o``), so that the rule covers
    that form; a rule naming only a read-only form (``find``, ``git``, ``git diff``, ``sed -n``) does not."""
    if len(prefix) < 2 or prefix[0] not in FLAG_CHECKED:
        return False
    return not is_read_only([*prefix, *_COMPLETIONS.get(prefix[0], [])])


def rule_covers(prefix: Sequence[str], argv: Sequence[str], origin: Origin | None = None) -> bool:
    """Whether an allow rule or grant whose words ``argv`` starts with may cover it: for a program
    with a read-only table (find, sed, sort, git, rg ...), only its read-only forms, unless the
    rule's own words name the unsafe form (:func:`names_unsafe_form`)."""
    if not prefix or not argv or argv[0] not in FLAG_CHECKED or argv[0] in ("env", "command"):
        return True
    fed = origin is not None and "xargs" in origin.wrappers  # find -exec only adds the paths it found
    if argv[0] == "find":  # the commands of -exec and -ok are decided as commands of their own
        argv = [argv[0], *_without_exec(argv[1:])]
    return is_read_only(argv, more_arguments=fed) or names_unsafe_form(prefix)


def _without_exec(args: Sequence[str]) -> list[str]:
    """find's arguments without its ``-exec CMD ... ;`` / ``+`` actions (and ``-execdir``, ``-ok``, ``-okdir``)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            while i < len(args) and args[i] not in (";", "+"):
                i += 1
        else:
            out.append(args[i])
        i += 1
    return out


def _plain(program: str) -> bool:
    return "/" not in program or (program.startswith(SYSTEM_DIRS) and "/." not in program)


class ReadOnly:
    """The read-only commands of one configuration: the built-in table (unless turned off) and the user's own."""

    def __init__(self, *, builtin: bool = True, extra: Iterable[str] = ()) -> None:
        """``extra``: command prefixes (``"make -n"``); raises ValueError for one that is not a command."""
        from monkey.tools.command_line import split_command
        from monkey.tools.errors import ToolError

        self.builtin = builtin
        self.extra: list[list[str]] = []
        for entry in extra:
            try:
                words = split_command(str(entry))
            except ToolError as exc:
                raise ValueError(f"bad read_only_extra entry {entry!r}: {exc}") from None
            if not words:
                raise ValueError(f"bad read_only_extra entry {entry!r}: it names no command")
            self.extra.append(words)

    def covers(self, argv: Sequence[str], origin: Origin | None = None) -> bool:
        """Whether one simple command (as :func:`parse_line` gives it) is read-only here."""
        program = origin.program if origin is not None else argv[0] if argv else ""
        for prefix in self.extra:
            first = program if "/" in prefix[0] else argv[0] if argv else ""
            if (
                first == prefix[0]
                and list(argv[1 : len(prefix)]) == prefix[1:]
                and ("/" in prefix[0] or _plain(program))
            ):
                return True
        if not self.builtin or not _plain(program):
            return False
        fed = origin is not None and any(w in ("xargs", "find") for w in origin.wrappers)
        return is_read_only(argv, more_arguments=fed)

    def covers_line(
        self, line: str | ParsedLine, *, read_denied: Sequence[Any] = (), workspace: Path | None = None
    ) -> bool:
        """Whether a whole shell line only reads: it parses cleanly and every command in it is read-only
        (``read_denied``: the ``file_read`` deny rules, see :func:`reads_denied`)."""
        parsed = parse_line(line) if isinstance(line, str) else line
        return (
            not parsed.unsafe
            and bool(parsed.commands)
            and all(
                self.covers(argv, origin) and not reads_denied(argv, origin, read_denied, workspace)
                for argv, origin in zip(parsed.commands, parsed.origins, strict=True)
            )
        )


RECURSIVE_READERS = frozenset({"rg", "ag", "ack"})
"""Programs that read every file under the folders they are given (grep only with -r)."""


def _recursive(argv: Sequence[str]) -> bool:
    name, args = argv[0], argv[1:]
    if name in RECURSIVE_READERS or (name == "git" and "grep" in args):
        return True
    if name in ("grep", "egrep", "fgrep"):
        return "recurse" in args or any(
            a in ("--recursive", "--dereference-recursive")
            or a.startswith("--directories")
            or _cluster_has(a, "rR", "ABCDdefmX")
            for a in args
        )
    if name == "diff":
        return any(a in ("--recursive",) or _cluster_has(a, "r", "CDFILSUWx") for a in args)
    return False


def reads_denied(argv: Sequence[str], origin: Origin | None, rules: Sequence[Any], workspace: Path | None) -> bool:
    """Whether a read-only command may read what a ``file_read`` deny rule protects (``rules``: those rules).

    A read deny rule protects the file from the shell too (``cat .env`` asks with ``file_read(.env)``
    denied): a command asks when one of its words, or a path inside a word (``--file=.env``,
    ``HEAD:.env``), is covered by a rule, when it reads whole folders (``grep -r``, ``rg``), or when
    its arguments are only known at run time. Programs that read without naming what (a git diff of
    a tracked secret, a script) are beyond this check: the sandbox is what confines them.
    """
    if not rules:
        return False
    if any(not rule.pattern for rule in rules):
        return True  # every read is denied
    fed = origin is not None and any(w in ("xargs", "find") for w in origin.wrappers)
    if fed or _recursive(argv) or any("\0" in a for a in argv[1:]):
        return True
    for arg in argv[1:]:
        for path in {arg, arg.partition("=")[2], arg.partition(":")[2]}:
            if path and any(
                rule.matches("file_read", {"path": path}, for_deny=True, workspace=workspace) for rule in rules
            ):
                return True
    return False
