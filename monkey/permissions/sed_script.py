"""Whether a sed script only reads: the commands of its own that print, delete, branch or substitute.

GNU sed can run programs (the ``e`` command and the ``e`` flag of ``s``) and write or read
files (``w``, ``W``, ``r``, ``R`` and the ``w`` flag of ``s``) from inside a script, so
``sed`` is read-only only when its script holds none of them. The script is read the way GNU
sed reads it (an unescaped delimiter ends a regular expression, even inside brackets); any
command this reader does not know (``a``, ``i``, ``c``, ``v``...) counts as not read-only, so a
person looks.
"""

from __future__ import annotations

__all__ = ["only_reads"]

_SED_SIMPLE = set("pPdDnNgGhHxz=lF")


def only_reads(script: str) -> bool:  # noqa: PLR0912, PLR0915 - one scanner over sed's grammar, one branch a command
    """A sed script made only of commands that print, delete, branch or substitute (no e, w, r, a/i/c...)."""
    n = len(script)
    i = 0

    def delimited(j: int) -> int:
        """Past the closing delimiter of the part starting at ``j`` (the delimiter is ``script[j-1]``), or -1."""
        delim = script[j - 1]
        while j < n:
            ch = script[j]
            if ch == "\\":
                j += 2
                continue
            if ch == delim:
                return j + 1
            if ch == "\n":
                return -1
            j += 1
        return -1

    def address(j: int) -> int:
        if j < n and script[j].isdigit():
            while j < n and script[j].isdigit():
                j += 1
            if j < n and script[j] == "~":
                j += 1
                while j < n and script[j].isdigit():
                    j += 1
            return j
        if j < n and script[j] == "$":
            return j + 1
        if j < n and script[j] in "/\\":
            if script[j] == "\\":
                j += 1
                if j >= n or script[j] in "\n\\":
                    return -1
            j = delimited(j + 1)
            while 0 <= j < n and script[j] in "IM":
                j += 1
            return j
        return j

    while i < n:
        ch = script[i]
        if ch in " \t\n;}":
            i += 1
            continue
        if ch == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        i = address(i)
        if i < 0:
            return False
        if i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
                while i < n and script[i].isdigit():
                    i += 1
            else:
                i = address(i)
                if i < 0:
                    return False
        while i < n and script[i] in " \t":
            i += 1
        if i < n and script[i] == "!":
            i += 1
            while i < n and script[i] in " \t":
                i += 1
        if i >= n:
            return False
        ch = script[i]
        i += 1
        if ch == "{" or ch in _SED_SIMPLE:
            while ch == "l" and i < n and script[i].isdigit():
                i += 1
            continue
        if ch in "qQ":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if ch in "bBtT:":
            while i < n and script[i] not in ";\n}":
                i += 1
            continue
        if ch in "sy":
            if i >= n or script[i] in "\n\\":
                return False
            i = delimited(i + 1)
            if i < 0:
                return False
            i = delimited(i)
            if i < 0:
                return False
            if ch == "s":
                while i < n and (script[i] in "gpiImM" or script[i].isdigit()):
                    i += 1
            while i < n and script[i] in " \t":
                i += 1
            if i < n and script[i] not in ";\n}":
                return False  # the w and e flags, and anything else after the command
            continue
        return False  # e, w, W, r, R (run or touch files), a, i, c, v ... : a person looks
    return True
