"""The live event pane: every event as it streams, filterable by type, with a detail view.

Lines are written in batches on a timer; the log keeps the last :data:`MAX_LINES` lines and
the pane the last :data:`MAX_EVENTS` events, so memory stays bounded however long the
session runs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Input, Static

from monkey.events import Event, encode
from monkey.safe_text import escape_controls

if TYPE_CHECKING:
    from textual.widgets import RichLog

MAX_LINES = 1000
"""Lines the log keeps rendered."""
MAX_EVENTS = 5000
"""Events kept for filtering and the detail view."""


def _short(event: Event) -> str:
    fields = {k: getattr(event, k) for k in event.__struct_fields__ if k not in ("ts", "session_id")}
    text = " ".join(f"{k}={v!r}" for k, v in fields.items())
    text = escape_controls(text, keep_newlines=False)
    return text if len(text) <= 100 else text[:99] + "…"


class EventPane(Vertical):
    """Typed events as they stream. Type in the filter to keep matching types; ``#N`` shows event N."""

    DEFAULT_CSS = """
    EventPane { width: 60; dock: right; border-left: solid $primary; display: none; }
    EventPane.-open { display: block; }
    EventPane Input { height: 3; }
    EventPane RichLog { height: 1fr; }
    EventPane #event-detail { height: auto; max-height: 50%; display: none; overflow-y: auto; }
    EventPane #event-detail.-shown { display: block; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.events: deque[tuple[int, Event]] = deque(maxlen=MAX_EVENTS)
        """The last events with their sequence numbers."""
        self.count = 0
        """Events seen so far."""
        self.filter = ""
        """Types shown (comma or space separated substrings); empty: all."""
        self.detail = ""
        """The JSON of the event in the detail view (empty: none)."""
        self._pending: deque[tuple[int, Event]] = deque(maxlen=MAX_LINES)
        self.format_time: Callable[[float], str] = lambda ts: time.strftime("%H:%M:%S", time.localtime(ts))
        """How an event's time is shown (snapshot tests fix it)."""

    def build(self) -> None:
        """Mount the filter, the detail view and the log; done when the pane first opens.

        The pane starts hidden, so its children (and ``RichLog``, whose module is slow to
        import) are not made before the first frame. Events seen until then wait in the
        bounded pending queue.
        """
        if self.children:
            return
        from textual.widgets import RichLog

        self.mount_all([
            Input(placeholder="filter by type (e.g. tool, text_delta) · #N: event N's JSON", id="event-filter"),
            Static("", id="event-detail", markup=False),
            RichLog(max_lines=MAX_LINES, wrap=False, markup=False, id="event-log"),
        ])

    def _log(self) -> RichLog | None:
        """The log, once :meth:`build` has mounted it."""
        if not self.children:
            return None
        from textual.widgets import RichLog

        return self.query_one("#event-log", RichLog)

    def on_mount(self) -> None:
        self.set_interval(0.05, self.flush)

    def add(self, event: Event) -> None:
        """Record one event; it is drawn on the next tick."""
        self.count += 1
        item = (self.count, event)
        self.events.append(item)
        if self._matches(event):
            self._pending.append(item)

    def _matches(self, event: Event) -> bool:
        if not self.filter:
            return True
        words = [w for w in self.filter.replace(",", " ").split() if w]
        return any(w in event.type for w in words)

    def _line(self, n: int, event: Event) -> Text:
        when = self.format_time(event.ts)
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{n:>5} ", style="dim")
        line.append(f"{when} ", style="dim")
        line.append(f"{event.type:<18} ", style="bold cyan")
        line.append(_short(event))
        return line

    def flush(self) -> None:
        """Write what arrived since the last tick."""
        log = self._log() if self._pending else None
        if log is None:
            return
        items = list(self._pending)
        self._pending.clear()
        for n, event in items:
            log.write(self._line(n, event))

    def set_filter(self, text: str) -> None:
        """Show only matching types (re-renders from the kept events)."""
        self.filter = text.strip()
        log = self._log()
        if log is not None:
            log.clear()
        self._pending.clear()
        for item in self.events:
            if self._matches(item[1]):
                self._pending.append(item)
        self.flush()

    def show_detail(self, n: int) -> bool:
        """Show event number ``n`` as pretty JSON; False if it is no longer kept."""
        self.build()
        detail = self.query_one("#event-detail", Static)
        for seq, event in self.events:
            if seq == n:
                import json

                from rich.syntax import Syntax  # imported when first used: pygments is slow to load

                pretty = json.dumps(json.loads(encode(event)), indent=2, ensure_ascii=False)
                self.detail = pretty
                detail.update(Syntax(escape_controls(pretty), "json", theme="ansi_dark", word_wrap=True))
                detail.add_class("-shown")
                return True
        detail.update(Text(f"event {n} is not kept (the last {MAX_EVENTS} are)", style="yellow"))
        detail.add_class("-shown")
        return False

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        value = event.value.strip()
        if value.startswith("#"):
            return
        self.query_one("#event-detail").remove_class("-shown")
        self.set_filter(value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value.startswith("#") and value[1:].isdigit():
            self.show_detail(int(value[1:]))
