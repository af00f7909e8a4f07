"""The text of a shell word as :mod:`monkey.permissions.shell_parse` reads it: its backslash escapes
(outside quotes and inside double quotes) and whether the shell would expand it as a pattern."""

from __future__ import annotations

import re

__all__ = ["UNQUOTED_ESCAPE", "QUOTED_ESCAPE", "unescape", "expands"]


UNQUOTED_ESCAPE = re.compile(r"\\(.)", re.S)
QUOTED_ESCAPE = re.compile(r'\\([$`"\\\n])')
"""The backslash escapes of a word and of a double-quoted string (where only these five are escapes)."""


def unescape(match: re.Match[str]) -> str:
    return "" if match.group(1) == "\n" else match.group(1)  # a backslash-newline joins lines


def expands(text: str) -> bool:
    """Whether unquoted word text is a pattern the shell expands (``*``, ``?``, ``[..]``, ``{a,b}``, ``{1..3}``)."""
    if "*" not in text and "?" not in text and "[" not in text and "{" not in text:
        return False
    plain = []
    escaped = False
    for ch in text:
        if escaped:
            plain.append("\0")  # an escaped character is literal
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            plain.append(ch)
    word = "".join(plain)
    if "*" in word or "?" in word:
        return True
    if "[" in word and "]" in word[word.index("[") :]:
        return True
    brace = word.find("{")
    while brace != -1:
        end = word.find("}", brace)
        if end == -1:
            return False
        inner = word[brace + 1 : end]
        if "," in inner or ".." in inner:
            return True
        brace = word.find("{", brace + 1)
    return False
