"""The assistant's streamed answer, rendered as markdown and refreshed at most every 100 ms.

Each refresh re-parses the last, still open markdown block, so an open block that keeps
growing (one long paragraph without a line break) would cost more on every refresh. Once
the open block passes :data:`OPEN_BLOCK_LIMIT` characters, what follows is shown as plain
text in an :class:`OpenTail`, which wraps only its last row again when text arrives; the
markdown takes it back at the next blank line, and all of it when the message completes.
"""

from __future__ import annotations

from textual.timer import Timer
from textual.widgets import Markdown

from monkey.safe_text import escape_controls
from monkey.ui.widgets.open_tail import OpenTail

__all__ = ["AssistantText", "REFRESH", "OPEN_BLOCK_LIMIT"]

REFRESH = 0.1
"""Seconds between redraws while text streams in. Each redraw re-lays out the screen
(Textual's Markdown asks for a layout on every update), so ten a second leave the event
loop free for key presses; faster looks no smoother in a terminal."""

OPEN_BLOCK_LIMIT = 2000
"""Characters of the open block (after the last blank line) re-parsed as markdown on each redraw."""


class AssistantText(Markdown):
    """One assistant message. Deltas accumulate; a timer redraws when something changed."""

    DEFAULT_CSS = """
    AssistantText { margin: 0 0 1 0; padding: 0 1; background: transparent; }
    AssistantText.-thinking { color: $text-muted; text-style: italic; }
    """

    def __init__(self, kind: str = "text", **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.kind = kind
        """``text`` or ``thinking``."""
        self.buffer: list[str] = []
        """Everything received so far."""
        self._dirty = False
        self._timer: Timer | None = None
        self._completed = False
        self._ready = False
        self._fed = 0  # characters handed to the markdown
        self._target = 0  # characters the markdown should have; the rest is the open tail
        self._appending = False
        self._tail: OpenTail | None = None
        if kind == "thinking":
            self.add_class("-thinking")

    def on_mount(self) -> None:
        # Runs before Markdown's own mount handler, which shows ``_initial_markdown``:
        # hand it what arrived before the widget was mounted.
        self._ready = True
        self._dirty = False
        text = self.text
        self._initial_markdown = escape_controls(text)
        self._fed = self._target = len(text)
        if not self._completed:
            self._timer = self.set_interval(REFRESH, self.redraw)

    def add_delta(self, text: str) -> None:
        """Add a delta; it is drawn on the next tick."""
        self.buffer.append(text)
        self._dirty = True

    @property
    def text(self) -> str:
        """The whole message so far (the buffer is joined into one piece)."""
        if len(self.buffer) > 1:
            self.buffer[:] = ["".join(self.buffer)]
        return self.buffer[0] if self.buffer else ""

    def redraw(self) -> None:
        """Draw what arrived since the last redraw (the refresh timer calls this every :data:`REFRESH`)."""
        if not (self._dirty and self._ready):
            return
        self._dirty = False
        text = self.text
        if self._completed:
            target = len(text)
        else:
            blank = text.rfind("\n\n")
            open_from = 0 if blank < 0 else blank + 2
            # a small open block is re-parsed as today; a large one waits in the tail for a blank line
            target = len(text) if len(text) - open_from <= OPEN_BLOCK_LIMIT else max(open_from, self._fed)
        self._target = max(self._target, target)
        if self._fed < self._target:
            if self._tail is not None:  # its text goes to the markdown now
                self._tail.remove()
                self._tail = None
            if not self._appending:
                self._appending = True
                self.call_later(self._append_pending)
        elif not self._appending:
            self._show_tail(text)

    async def _append_pending(self) -> None:
        # One append at a time: Markdown.append reads state that its previous append updates.
        try:
            while self._fed < self._target:
                start, self._fed = self._fed, self._target
                await self.append(escape_controls(self.text[start : self._fed]))  # parses from its last block on
        finally:
            self._appending = False
        self._show_tail(self.text)

    def _show_tail(self, text: str) -> None:
        if len(text) <= self._target:
            return
        if self._tail is None:
            self._tail = OpenTail()
            self.mount(self._tail)  # after the blocks: no append runs while a tail is shown
        shown = self._target + self._tail.raw_length
        if len(text) > shown:
            self._tail.add(text[shown:])

    def complete(self) -> None:
        """The message is whole: draw it (all as markdown) and stop the timer."""
        self._completed = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._tail is not None:
            self._dirty = True
        self.redraw()
