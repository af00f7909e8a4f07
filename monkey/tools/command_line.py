"""How a command line is read: whether it needs a shell, and its argument vector.

A line is read once (:func:`read_line`, cached) into a :class:`ShellLine`: the permission
engine decides on it (:mod:`monkey.permissions.shell_parse` builds its commands from the
line's :attr:`~ShellLine.argv` when the line needs no shell), the request carries it, and
``shell_execute`` runs that same argv (or, for a line that needs a shell and a person
approved, exactly that text through ``/bin/sh -c``). Standard library only: approval rules
are checked before the app draws its first frame.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache

from monkey.tools.errors import ToolError

__all__ = ["ShellLine", "needs_shell", "read_line", "split_command"]

_OPERATORS = {
    "|": "| (pipe)",
    "||": "|| (run if the previous command failed)",
    "&": "& (background job)",
    "&&": "&& (run if the previous command succeeded)",
    ";": "; (command separator)",
    "<": "< (input redirection)",
    ">": "> (output redirection)",
    "(": "( ) (subshell)",
    ")": "( ) (subshell)",
    "`": "` (command substitution)",
    "\n": "newline (more than one command)",
}
_ASSIGNMENT = re.compile(r"[ \t]*[A-Za-z_][A-Za-z0-9_]*=")
_BRACE_EXPANSION = re.compile(r"\{[^\s'\"{}]*(?:,|\.\.)[^\s'\"{}]*\}")


def _dollar(rest: str) -> str:
    if rest.startswith("("):
        return "$( ) (command substitution)"
    return "$ (variable expansion)"


def needs_shell(command: str) -> str | None:
    """Describe the first shell construct of a command line, or None for a plain line.

    A plain line is one that ``/bin/sh`` would turn into exactly the argument vector that
    :func:`split_command` gives, so running it without a shell changes nothing. Anything
    else is reported: unquoted ``| & ; < > ( )``, ``$`` and backticks (also inside double
    quotes), newlines and control characters, glob characters ``* ? [``, ``~`` and ``#`` at
    the start of a word, brace expansion, and a leading ``NAME=value`` assignment. Nothing
    inside single quotes counts.

    Args:
        command: The command line as the model gave it.

    Returns:
        A short description such as ``"| (pipe)"``, or None.
    """
    if _ASSIGNMENT.match(command):
        return "NAME=value (variable assignment)"
    quote = ""
    word_start = True
    prev = ""
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if quote == "'":
            quote = "" if c == "'" else quote
            i += 1
            continue
        if quote == '"':
            if c == '"':
                quote = ""
            elif c == "\\":
                nxt = command[i + 1 : i + 2]
                if nxt in ("$", "`"):
                    return f"\\{nxt} inside double quotes (escaped expansion)"
                if nxt == "\n":
                    return "backslash-newline (line continuation)"
                i += 2
                continue
            elif c == "$":
                return _dollar(command[i + 1 :])
            elif c in "`\n":
                return _OPERATORS[c]
            i += 1
            continue
        if c == "\\":
            if command[i + 1 : i + 2] == "\n":
                return "backslash-newline (line continuation)"
            word_start, prev = False, ""
            i += 2
            continue
        if c in " \t":
            word_start, prev = True, c
            i += 1
            continue
        if c in "'\"":
            quote, word_start, prev = c, False, ""
            i += 1
            continue
        if c in "|&" and command[i + 1 : i + 2] == c:
            return _OPERATORS[c * 2]
        if c in _OPERATORS:
            return _OPERATORS[c]
        if c == "$":
            return _dollar(command[i + 1 :])
        if c in "*?[":
            return f"{c} (file name pattern)"
        if c == "#" and word_start:
            return "# (comment)"
        if c == "~" and (word_start or prev in ("=", ":")):
            return "~ (home directory expansion)"
        if c == "{":
            if word_start and command[i + 1 : i + 2] in ("", " ", "\t", "\n"):
                return "{ } (command group)"
            if _BRACE_EXPANSION.match(command, i):
                return "{a,b} (brace expansion)"
        if ord(c) < 32 or c == "\x7f":
            return f"control character {c!r}"
        word_start, prev = False, c
        i += 1
    return None


def split_command(command: str) -> list[str]:
    """Split a plain command line into an argument vector (POSIX shell quoting rules).

    Args:
        command: The command line.

    Returns:
        The argument vector; its first item is the program.

    Raises:
        ToolError: The line is empty or its quotes are unbalanced.
    """
    try:
        argv = shlex.split(command, posix=True)
    except ValueError as exc:
        raise ToolError(f"cannot parse the command line: {exc}") from None
    if not argv or not argv[0]:
        raise ToolError("the command is empty")
    return argv


@dataclass(frozen=True)
class ShellLine:
    """One command line as read once: what is decided about it is what runs."""

    text: str
    """The line exactly as given (what a person approves, and what a shell would run)."""
    construct: str | None
    """The first shell construct it uses (see :func:`needs_shell`), or None for a plain line."""
    argv: tuple[str, ...] | None
    """For a plain line: the argument vector it runs as, with no shell. None when it needs a
    shell or cannot be split (then :attr:`error` says why)."""
    error: str = ""
    """Why a plain line has no argv (unbalanced quotes, nothing to run)."""


@lru_cache(maxsize=1024)
def read_line(text: str) -> ShellLine:
    """Read ``text`` once: its shell construct, or its argument vector (cached by text)."""
    construct = needs_shell(text)
    if construct is not None:
        return ShellLine(text, construct, None)
    try:
        return ShellLine(text, None, tuple(split_command(text)))
    except ToolError as exc:
        return ShellLine(text, None, None, str(exc))
