"""A unified diff as coloured :class:`~rich.text.Text`: never markup, never terminal escapes."""

from __future__ import annotations

from rich.text import Text

from monkey.safe_text import escape_controls

__all__ = ["diff_text"]

_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"), ("#", "italic"))


def diff_text(diff: str) -> Text:
    """``diff`` coloured line by line (added green, removed red, hunks cyan), escaped first.

    Args:
        diff: A unified diff, possibly from untrusted files: control characters are escaped.

    Returns:
        Text to put in a ``Static``; Rich markup in the diff stays literal.
    """
    out = Text()
    for n, line in enumerate(escape_controls(diff).rstrip("\n").split("\n")):
        if n:
            out.append("\n")
        style = next((s for prefix, s in _STYLES if line.startswith(prefix)), "")
        out.append(line, style=style)
    return out
