"""Programs that run another command given in their arguments (``find -exec``, ``flock``, ``watch``...).

Unlike a wrapper (``timeout 5 cmd``, taken off before rules are matched), a runner is a
command of its own, which a rule must allow, *and* runs the command inside it, which the
rules must allow (or a deny rule refuses) too: a deny rule for ``rm`` catches
``find . -exec rm {} +`` and ``flock /tmp/l rm x``; with ``find`` allowed,
``find . -exec rm {} +`` still needs ``rm``. Wrappers no check knows stay a limit of any
parser (anthropics/claude-code#92542): the sandbox is what holds then.
"""

from __future__ import annotations

__all__ = ["inner_commands"]

Inner = tuple[str, list[str] | str]
"""``("argv", [...])`` for a command, ``("line", "...")`` for a shell line the runner runs."""

_VALUES: dict[str, frozenset[str]] = {
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "watch": frozenset({"-n", "--interval", "-q", "--equexit"}),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-a", "-b", "-I", "-O", "-P", "-S", "-u", "-U", "-X"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-a", "-n", "-u", "-x", "-l", "-L", "-w", "-A", "-D", "-F"}),
    "unshare": frozenset({"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd"}),
    "nsenter": frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd"}),
    "systemd-run": frozenset(
        "-u --unit -p --property -E --setenv --uid --gid -M --machine --description --slice -H --host".split()
    ),
    "xvfb-run": frozenset(
        "-n --server-num -s --server-args -e --error-file -f --auth-file -p --xauth-protocol -w --wait".split()
    ),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
}
_OPERANDS_FIRST = {"flock": 1, "taskset": 1, "chrt": 1, "chroot": 1, "faketime": 1}
"""How many operands (a lock file, a CPU mask, a priority, a root, a time) come before the command."""
_RUNNERS = frozenset(
    "flock watch strace ltrace valgrind unshare nsenter systemd-run xvfb-run proxychains proxychains4 taskset"
    " chrt chroot faketime pkexec fakeroot unbuffer eatmydata nocache torsocks dbus-run-session rlwrap catchsegv"
    " busybox toybox su runuser script sg find".split()
)
_STRING_FLAGS = {
    "su": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "script": ("-c", "--command"),
    "flock": ("-c", "--command"),
}
"""Options whose value is a shell line the runner hands to a shell."""


def inner_commands(argv: list[str]) -> list[Inner] | None:
    """What a runner runs, or None when ``argv[0]`` is no runner."""
    name, args = argv[0], argv[1:]
    if name not in _RUNNERS:
        return None
    if name == "find":
        return _find(args)
    if name == "sg":  # sg GROUP "command line"
        return [("line", " ".join(args[1:]))] if len(args) > 1 else []
    out: list[Inner] = []
    values = _VALUES.get(name, frozenset())
    strings = _STRING_FLAGS.get(name, ())
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        flag, _, attached = args[i].partition("=")
        if flag in strings:
            line = attached if attached else args[i + 1] if i + 1 < len(args) else ""
            out.append(("line", line))
            i += 1 if attached else 2
            continue
        i += 2 if args[i] in values else 1
    i += _OPERANDS_FIRST.get(name, 0)
    rest = args[i:]
    if rest and rest[0].partition("=")[0] in strings:  # flock FILE -c LINE
        _, _, attached = rest[0].partition("=")
        out.append(("line", attached if attached else rest[1] if len(rest) > 1 else ""))
        return out
    if name in ("su", "runuser"):
        return out  # su [user]: only its -c line runs a command
    if rest:
        out.append(("line", " ".join(rest)) if name == "watch" else ("argv", rest))  # watch hands sh one line
    return out


def _find(args: list[str]) -> list[Inner]:
    out: list[Inner] = []
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(("argv", args[i + 1 : j]))
            i = j
        i += 1
    return out
