"""How a command line is read: whether it needs a shell, and its argument vector.

Shared by ``shell_execute`` and the approval code, so what a person is shown and what
runs are decided by the same functions. Standard library only: approval rules are checked
before the app draws its first frame.
"""

from __future__ import annotations

import re
import shlex

from monkey.tools.errors import ToolError

__all__ = ["needs_shell", "split_command"]

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
