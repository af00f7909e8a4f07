"""The assistant's streamed answer, rendered as markdown and refreshed at most every 50 ms."""

from __future__ import annotations

from textual.widgets import Markdown

from monkey.safe_text import escape_controls

REFRESH = 0.05
"""Seconds between redraws while text streams in."""


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
        self._timer = None
        self._completed = False
        self._ready = False
        self._shown = 0
        if kind == "thinking":
            self.add_class("-thinking")

    def on_mount(self) -> None:
        # Runs before Markdown's own mount handler, which shows ``_initial_markdown``:
        # hand it what arrived before the widget was mounted.
        self._ready = True
        self._dirty = False
        self._initial_markdown = escape_controls(self.text)
        self._shown = len(self.buffer)
        if not self._completed:
            self._timer = self.set_interval(REFRESH, self._flush)

    def add_delta(self, text: str) -> None:
        """Add a delta; it is drawn on the next tick."""
        self.buffer.append(text)
        self._dirty = True

    @property
    def text(self) -> str:
        """The whole message so far."""
        return "".join(self.buffer)

    def _flush(self) -> None:
        if self._dirty and self._ready:
            self._dirty = False
            new = "".join(self.buffer[self._shown:])
            self._shown = len(self.buffer)
            self.append(escape_controls(new))  # Markdown parses only from its last block on

    def complete(self) -> None:
        """The message is whole: draw it and stop the timer."""
        self._completed = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._flush()
