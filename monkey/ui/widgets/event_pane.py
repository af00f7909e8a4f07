"""The live event pane: every event as it streams, filterable by type, with a detail view.

Lines are written in batches on a timer; the log keeps the last :data:`MAX_LINES` lines and
the pane the last :data:`MAX_EVENTS` events, so memory stays bounded however long the
session runs.

Keys: in the filter, type substrings of event types to keep (``tool, usage``), ``@ID`` to keep
one session's events (an id prefix: a sub-agent's session, marked in its lines), ``#N`` and
Enter to show event N's JSON, and Down (or Tab) to move into the list. In the list,
Up/Down/PageUp/PageDown/Home/End move the highlighted row, Enter (or a click on a row)
shows that event's JSON, and the detail then follows the highlight; Esc closes the detail,
and a second Esc gives the focus back to where it came from (the filter or the message box).

A new event never moves the highlight to another event. With the highlight on the last
row and the detail closed, the highlight follows new events (tail mode); otherwise the
highlighted row stays where it is on the screen.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Input, Static

from monkey.events import Event, encode
from monkey.safe_text import escape_controls

if TYPE_CHECKING:
    from textual.widget import Widget
    from textual.widgets import RichLog

MAX_LINES = 1000
"""Lines the log keeps rendered."""
MAX_EVENTS = 5000
"""Events kept for filtering and the detail view."""


def _short(event: Event) -> str:
    fields = {k: getattr(event, k) for k in event.__struct_fields__ if k not in ("ts", "session_id", "parent_call_id")}
    text = " ".join(f"{k}={v!r}" for k, v in fields.items())
    text = escape_controls(text, keep_newlines=False)
    return text if len(text) <= 100 else text[:99] + "…"


@cache
def event_log_class() -> type[RichLog]:
    """The event list: a ``RichLog`` of one line per event, with a highlighted row.

    Built on first use: ``RichLog``'s module is slow to import and the pane starts hidden,
    so it stays out of the first frame. The log stays a ``RichLog`` (cheap appends, bounded
    by ``max_lines``); this adds the event number of each line and draws the highlight
    when a line is painted, so moving it re-renders nothing.
    """
    from textual.widgets import RichLog

    class EventLog(RichLog):
        """One line per event; a highlighted row to pick one with the keyboard or the mouse."""

        BINDINGS = [
            Binding("up", "move(-1)", "Previous event", show=False),
            Binding("down", "move(1)", "Next event", show=False),
            Binding("pageup", "page(-1)", "Page up", show=False),
            Binding("pagedown", "page(1)", "Page down", show=False),
            Binding("home", "jump(0)", "First event", show=False),
            Binding("end", "jump(-1)", "Last event", show=False),
            Binding("enter", "choose", "Show the event's JSON", show=False),
        ]
        COMPONENT_CLASSES = {"event-log--cursor"}
        DEFAULT_CSS = """
        EventLog > .event-log--cursor {
            color: $block-cursor-blurred-foreground;
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        EventLog:focus > .event-log--cursor {
            color: $block-cursor-foreground;
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }
        """

        class Highlighted(Message):
            """The highlight was moved (by a key) to event ``seq``."""

            def __init__(self, seq: int) -> None:
                super().__init__()
                self.seq = seq
                """The event number now highlighted."""

        class Chosen(Message):
            """Enter or a click asked for event ``seq``'s detail."""

            def __init__(self, seq: int) -> None:
                super().__init__()
                self.seq = seq
                """The event number chosen."""

        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            self.seqs: deque[int] = deque(maxlen=self.max_lines)
            """The event number of each line, in order (increasing)."""
            self.selected: int | None = None
            """The event number of the highlighted line (None: no highlight, follow the end)."""
            self.hold = False
            """Keep the highlight where it is even on the last line (the detail is open)."""

        # -- rows ----------------------------------------------------------------

        def row_of(self, seq: int) -> int | None:
            """The line showing event ``seq``, or None if it is not shown."""
            row = bisect_left(self.seqs, seq)
            return row if row < len(self.seqs) and self.seqs[row] == seq else None

        @property
        def cursor_row(self) -> int | None:
            """The highlighted line, if any."""
            return None if self.selected is None else self.row_of(self.selected)

        def append(self, rows: list[tuple[int, Text]]) -> None:
            """Write one line per ``(event number, line)``, keeping the highlight on its event."""
            if not rows:
                return
            row = self.cursor_row
            tail = self.selected is None or (row == len(self.seqs) - 1 and not self.hold)
            offset = 0 if row is None else row - self.scroll_offset.y
            for seq, line in rows:
                self.seqs.append(seq)
                self.write(line, scroll_end=False)
            if tail:
                if self.selected is not None:
                    self.selected = self.seqs[-1]
                self.scroll_end(animate=False, immediate=False, x_axis=False)
                return
            new = self.cursor_row
            if new is None:  # it went off the top (only the last max_lines are kept)
                new = 0
                self.selected = self.seqs[0]
            # lines dropped at the top move everything up: keep the highlight where it was on screen
            self.scroll_to(y=max(0, new - offset), animate=False)
            self.refresh()

        def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
            """A scrollbar that appears takes a row: a log following the end stays at the end."""
            self._follow_end()

        def on_resize(self, event: events.Resize) -> None:
            self._follow_end()

        def _follow_end(self) -> None:
            if self.selected is None:
                self.call_after_refresh(self.scroll_end, animate=False, immediate=True, x_axis=False)

        def clear(self) -> EventLog:
            self.seqs.clear()
            return super().clear()

        def select(self, seq: int | None) -> None:
            """Highlight event ``seq`` (if shown) and scroll it into view; None removes the highlight."""
            self.selected = seq if seq is None or self.row_of(seq) is not None else None
            self.scroll_to_cursor()
            self.refresh()

        def scroll_to_cursor(self) -> None:
            """Scroll just enough to show the highlighted line."""
            row = self.cursor_row
            if row is None:
                return
            top = self.scroll_offset.y
            height = max(1, self.scrollable_content_region.height)
            if row < top:
                self.scroll_to(y=row, animate=False, immediate=True)
            elif row >= top + height:
                self.scroll_to(y=row - height + 1, animate=False, immediate=True)

        def _move_to(self, row: int) -> None:
            if not self.seqs:
                return
            row = max(0, min(len(self.seqs) - 1, row))
            if self.seqs[row] == self.selected:
                return
            self.select(self.seqs[row])
            self.post_message(self.Highlighted(self.seqs[row]))

        def _start_row(self) -> int:
            """Where a highlight starts: the last line in view (the last line when following)."""
            height = max(1, self.scrollable_content_region.height)
            return min(len(self.seqs) - 1, self.scroll_offset.y + height - 1)

        # -- keys and mouse --------------------------------------------------------

        def action_move(self, step: int) -> None:
            """Move the highlight ``step`` lines."""
            row = self.cursor_row
            self._move_to(self._start_row() if row is None else row + step)

        def action_page(self, direction: int) -> None:
            """Move the highlight a screenful."""
            self.action_move(direction * max(1, self.scrollable_content_region.height - 1))

        def action_jump(self, row: int) -> None:
            """Highlight the first (0) or last (-1) line."""
            self._move_to(row if row >= 0 else len(self.seqs) - 1)

        def action_choose(self) -> None:
            """Ask for the highlighted event's detail."""
            if self.selected is not None:
                self.post_message(self.Chosen(self.selected))

        def on_focus(self) -> None:
            if self.cursor_row is None and self.seqs:
                self.select(self.seqs[self._start_row()])
            self.refresh()

        def on_blur(self) -> None:
            self.refresh()

        def on_click(self, event: events.Click) -> None:
            offset = event.get_content_offset(self)
            if offset is None:
                return
            row = self.scroll_offset.y + offset.y
            if 0 <= row < len(self.seqs):
                self.select(self.seqs[row])
                self.post_message(self.Chosen(self.seqs[row]))

        # -- drawing ---------------------------------------------------------------

        def render_line(self, y: int) -> Strip:
            scroll_x, scroll_y = self.scroll_offset
            row = scroll_y + y
            if row != self.cursor_row or row >= len(self.lines):
                return super().render_line(y)
            width = self.scrollable_content_region.width
            style = self.rich_style + self.get_component_rich_style("event-log--cursor")
            return self.lines[row].crop_extend(scroll_x, scroll_x + width, None).apply_style(style)

    return EventLog


class EventPane(Vertical):
    """Typed events as they stream, one line each, with a highlighted row and a JSON detail view.

    Type in the filter to keep matching types; ``#N`` shows event N. Down moves into the list,
    where the arrows, PageUp/PageDown and Home/End move the highlight, Enter or a click shows
    the event's JSON, and Esc closes it (a second Esc leaves the list).
    """

    BINDINGS = [
        Binding("down", "focus_list", "Events list", show=False),
        Binding("escape", "back", "Close the detail / leave the list", show=False),
    ]
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
        self.main_session = ""
        """The session the person talks to; a sub-agent's events are marked with their session."""
        """Types shown (comma or space separated substrings); empty: all."""
        self.detail = ""
        """The JSON of the event in the detail view (empty: none)."""
        self._pending: deque[tuple[int, Event]] = deque(maxlen=MAX_LINES)
        self._return_to: Widget | None = None
        self._came_from: Widget | None = None
        """What had the focus before it came into the pane (Esc in the filter goes back there)."""
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
        self.mount_all(
            [
                Input(placeholder="filter by type (e.g. tool) · ↓ pick an event · #N", id="event-filter"),
                Static("", id="event-detail", markup=False),
                event_log_class()(max_lines=MAX_LINES, wrap=False, markup=False, id="event-log"),
            ]
        )

    def open(self) -> None:
        """The pane was just shown: the newest events in view, the focus in the filter."""
        self.build()
        self.flush()
        self.call_after_refresh(self._show_newest)
        self.focus_filter()

    def focus_filter(self) -> None:
        """Put the focus in the filter (once it is mounted)."""
        self.call_after_refresh(lambda: self.query_one("#event-filter").focus())

    def _show_newest(self) -> None:
        log = self._log()
        if log is not None and (log.selected is None or log.cursor_row == len(log.seqs) - 1):
            log.scroll_end(animate=False, immediate=True, x_axis=False)

    def _log(self):  # an EventLog or None (its class is built lazily)
        """The log, once :meth:`build` has mounted it."""
        if not self.children:
            return None
        return self.query_one("#event-log", event_log_class())

    def on_mount(self) -> None:
        self.set_interval(0.05, self.flush)
        self.watch(self.screen, "focused", self._focus_moved, init=False)

    def _focus_moved(self, old: Widget | None, new: Widget | None) -> None:
        """Remember where the focus came from when it enters the list or the pane (Esc goes back there)."""
        if new is not None and new.id == "event-log" and old is not None and old is not new:
            self._return_to = old
        if new is not None and old is not None and self in new.ancestors and self not in old.ancestors:
            self._came_from = old

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
        sessions = [w[1:] for w in words if w.startswith("@") and len(w) > 1]
        types = [w for w in words if not w.startswith("@")]
        if sessions and not any(event.session_id.startswith(p) for p in sessions):
            return False
        return not types or any(w in event.type for w in types)

    def _line(self, n: int, event: Event) -> Text:
        when = self.format_time(event.ts)
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{n:>5} ", style="dim")
        line.append(f"{when} ", style="dim")
        if event.session_id and self.main_session and event.session_id != self.main_session:
            line.append(f"@{event.session_id[:10]} ", style="magenta")  # a sub-agent's
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
        log.append([(n, self._line(n, event)) for n, event in items])

    def set_filter(self, text: str) -> None:
        """Show only matching types (re-renders from the kept events).

        The highlight stays on its event if that event still matches; otherwise it goes.
        """
        self.filter = text.strip()
        log = self._log()
        selected = None
        if log is not None:
            selected, log.selected = log.selected, None
            log.clear()
        self._pending.clear()
        for item in self.events:
            if self._matches(item[1]):
                self._pending.append(item)
        self.flush()
        if log is not None and selected is not None:
            log.select(selected)

    def show_detail(self, n: int) -> bool:
        """Show event number ``n`` as pretty JSON (and highlight it); False if it is no longer kept."""
        self.build()
        detail = self.query_one("#event-detail", Static)
        log = self._log()
        for seq, event in self.events:
            if seq == n:
                import json

                from rich.syntax import Syntax  # imported when first used: pygments is slow to load

                pretty = json.dumps(json.loads(encode(event)), indent=2, ensure_ascii=False)
                self.detail = pretty
                detail.update(Syntax(escape_controls(pretty), "json", theme="ansi_dark", word_wrap=True))
                detail.add_class("-shown")
                if log is not None:
                    log.hold = True
                    if log.selected != n:
                        log.select(n)
                    # the detail takes room from the log: keep the highlighted line in view
                    self.call_after_refresh(log.scroll_to_cursor)
                return True
        detail.update(Text(f"event {n} is not kept (the last {MAX_EVENTS} are)", style="yellow"))
        detail.add_class("-shown")
        return False

    def hide_detail(self) -> None:
        """Close the detail view."""
        self.detail = ""
        if not self.children:
            return
        self.query_one("#event-detail").remove_class("-shown")
        log = self._log()
        if log is not None:
            log.hold = False

    @property
    def detail_shown(self) -> bool:
        """Whether the detail view is open."""
        return bool(self.children) and self.query_one("#event-detail").has_class("-shown")

    def action_focus_list(self) -> None:
        """Down in the filter: move into the list."""
        log = self._log()
        if log is not None:
            log.focus()

    def action_back(self) -> None:
        """Esc: close the detail; from the list, give the focus back; otherwise let the app have it."""
        if self.detail_shown:
            self.hide_detail()
            return
        log = self._log()
        if log is None or not log.has_focus:
            back = self._came_from
            if (
                self.children
                and self.query_one("#event-filter").has_focus
                and back is not None
                and back.is_attached
                and back.display
            ):
                back.focus()  # from the filter: back to the message box, the pane stays open
                return
            raise SkipAction()
        target = self._return_to
        if target is None or not target.is_attached or not target.display:
            target = self.query_one("#event-filter")
        target.focus()

    def on_event_log_highlighted(self, message: object) -> None:
        """The highlight moved: the open detail follows it."""
        message.stop()  # type: ignore[attr-defined]
        if self.detail_shown:
            self.show_detail(message.seq)  # type: ignore[attr-defined]

    def on_event_log_chosen(self, message: object) -> None:
        """Enter or a click on a row: show that event."""
        message.stop()  # type: ignore[attr-defined]
        self.show_detail(message.seq)  # type: ignore[attr-defined]

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        value = event.value.strip()
        if value.startswith("#"):
            return
        self.hide_detail()
        self.set_filter(value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value.startswith("#") and value[1:].isdigit():
            self.show_detail(int(value[1:]))
