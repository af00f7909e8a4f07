"""The newest text of a long open markdown block, shown plain while it streams.

Re-parsing a growing paragraph as markdown costs more on every redraw; this widget keeps
its word-wrapped rows and, when text arrives, wraps only its last row again.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from monkey.safe_text import escape_controls

__all__ = ["OpenTail", "wrap_rows"]

_TOKEN = re.compile(r"\n|[^ \n]+ *| +")
"""A line break, or a word with the spaces after it, or spaces that start a row."""


def wrap_rows(text: str, width: int, start: int = 0) -> list[int]:
    """Where each row starts when ``text[start:]`` is word-wrapped greedily to ``width`` cells.

    A row's decisions depend only on the text from its own start, so wrapping again from
    the start of the last row gives the same rows as wrapping everything again.
    """
    rows = [start]
    col = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        at = match.start()
        if token == "\n":
            rows.append(match.end())
            col = 0
            continue
        word = len(token.rstrip(" "))
        cells = cell_len(token[:word])
        if col and col + cells > width:  # does not fit after what the row holds: a new row
            rows.append(at)
            col = 0
        while cells > width:  # longer than a row: fold it
            used = 0
            for i, ch in enumerate(token[:word]):
                used += cell_len(ch)
                if used > width:
                    cut = max(i, 1)
                    break
            else:  # pragma: no cover - cells > width means the loop breaks
                cut = word
            at += cut
            token, word = token[cut:], word - cut
            rows.append(at)
            cells = cell_len(token[:word])
        col += cell_len(token)
    return rows


class OpenTail(Widget):
    """The open block's newest text, plain and wrapped; only its last row is wrapped again on :meth:`add`."""

    DEFAULT_CSS = "OpenTail { height: auto; }"

    def __init__(self) -> None:
        super().__init__()
        self.raw_length = 0
        """Characters of the message shown here (before escaping)."""
        self._text = ""
        self._width = 0
        self._rows: list[int] = [0]

    def add(self, raw: str) -> None:
        """Show more text; markup and escape sequences in it stay inert."""
        self.raw_length += len(raw)
        self._text += escape_controls(raw).replace("\t", "    ")
        before = len(self._rows)
        if self._width:
            self._rows[-1:] = wrap_rows(self._text, self._width, self._rows[-1])
        self.refresh(layout=len(self._rows) != before)

    def _wrap(self, width: int) -> None:
        if width != self._width:
            self._width = width
            self._rows = wrap_rows(self._text, width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._wrap(max(1, width))
        return len(self._rows)

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        self._wrap(max(1, width))
        style = self.rich_style
        if y >= len(self._rows):
            return Strip.blank(width, style)
        end = self._rows[y + 1] if y + 1 < len(self._rows) else len(self._text)
        row = self._text[self._rows[y] : end].rstrip("\n")
        return Strip([Segment(row, style)]).crop_extend(0, width, style)
