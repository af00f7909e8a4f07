"""A collapsible block the program opens and closes without moving the person's view.

Textual's :class:`~textual.widgets.Collapsible` scrolls itself into view after every change of
``collapsed`` (``scroll_visible`` after the next refresh). When a person clicks its title that is
what they want; when the program opens a finished edit's diff, it scrolls the transcript away from
its end and releases the anchor that keeps it following, so what arrives next (the final answer) is
left below "more below". Whether it happened depended on whether more content was laid out before
that refresh: about half of the turns with a diff taller than the view.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Collapsible

__all__ = ["QuietCollapsible"]


class QuietCollapsible(Collapsible):
    """A :class:`Collapsible` with :meth:`set_open`: a change made by the program does not scroll."""

    _quiet = False

    def set_open(self, opened: bool) -> None:
        """Open (or close) the block, leaving the scroll position to whoever owns it."""
        if self.collapsed == (not opened):
            return
        self._quiet = self.is_mounted  # the next scroll_visible is the one this change asks for
        self.collapsed = not opened

    def scroll_visible(self, *args: Any, **kwargs: Any) -> None:
        if self._quiet:
            self._quiet = False
            return
        super().scroll_visible(*args, **kwargs)
