"""The line under the transcript that says the conversation goes on below what is shown."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Static

__all__ = ["MoreBelow"]


class MoreBelow(Static):
    """Shown while the person reads above the end; a click (or Ctrl+End) goes back down."""

    DEFAULT_CSS = """
    MoreBelow { height: 1; display: none; padding: 0 1; background: $accent 30%; color: $text; text-style: bold; }
    MoreBelow.-shown { display: block; }
    """

    class JumpDown(Message):
        """The person asked to see the end of the conversation."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("↓ more below · Ctrl+End jumps to the end", markup=False, **kwargs)  # type: ignore[arg-type]

    def on_click(self) -> None:
        self.post_message(self.JumpDown())
