"""``/processes`` in the app: the session's background processes and the live output of one.

The table lists each process (id, state, command); the pane below follows what the selected
one prints, read from its :class:`~monkey.tools.processes.OutputLog` a few times a second from
where the last read stopped. ``s`` stops the selected process (its group and what it started),
``k`` keeps it past the end of the session or lets it go with the session again, Esc closes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Log, Static

from monkey.safe_text import escape_controls
from monkey.tools.processes import BackgroundProcess, ProcessTable

__all__ = ["ProcessesScreen"]

FOLLOW = 0.25
"""Seconds between two reads of the selected process's output."""


class ProcessesScreen(ModalScreen[None]):
    """The background processes of the session; the selected one's output as it comes."""

    DEFAULT_CSS = """
    ProcessesScreen { background: $background; }
    ProcessesScreen #heading { padding: 0 1; background: $primary-background; }
    ProcessesScreen #table { height: auto; max-height: 12; }
    ProcessesScreen #output { height: 1fr; border: round $primary; }
    """
    BINDINGS = [
        Binding("s", "stop", "stop"),
        Binding("k", "keep", "keep past the session / release"),
        Binding("escape", "close", "close"),
    ]

    def __init__(self, table: ProcessTable) -> None:
        super().__init__()
        self.table = table
        """The agent's processes."""
        self.shown: BackgroundProcess | None = None
        """The process whose output the pane follows."""
        self.read_to = 0
        """How far its output was read (the ``since`` of the next read)."""

    def compose(self) -> ComposeResult:
        yield Static(Text("Background processes", style="bold"), id="heading")
        yield DataTable(id="table", cursor_type="row", zebra_stripes=True)
        yield Log(id="output", highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#table", DataTable).add_columns("id", "state", "command")
        self.table.listeners.append(self._refill)
        self._refill()
        self.set_interval(FOLLOW, self._follow)

    def on_unmount(self) -> None:
        if self._refill in self.table.listeners:
            self.table.listeners.remove(self._refill)

    def _refill(self) -> None:
        grid = self.query_one("#table", DataTable)
        row = grid.cursor_row
        grid.clear()
        for entry in self.table.all():
            state = entry.status() + (", kept" if entry.kept else "")
            grid.add_row(entry.id, state, escape_controls(entry.command, keep_newlines=False), key=entry.id)
        if grid.row_count:
            grid.move_cursor(row=min(max(row, 0), grid.row_count - 1))
            self._select(self.table.all()[grid.cursor_row])
        else:
            self.query_one("#output", Log).write_line(
                "no background processes (shell_execute with background starts one)"
            )

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        entries = self.table.all()
        if 0 <= message.cursor_row < len(entries):
            self._select(entries[message.cursor_row])

    def _select(self, entry: BackgroundProcess) -> None:
        if entry is self.shown:
            return
        self.shown, self.read_to = entry, 0
        self.query_one("#output", Log).clear()
        self._follow()

    def _follow(self) -> None:
        entry = self.shown
        if entry is None:
            return
        text, self.read_to, dropped = entry.output.read(self.read_to, 65536)
        log = self.query_one("#output", Log)
        if dropped:
            log.write_line(f"[{dropped} earlier characters are no longer kept]")
        if text:
            log.write(escape_controls(text))

    def action_stop(self) -> None:
        if self.shown is not None:
            self.run_worker(self.table.stop(self.shown.id), group="stop")

    def action_keep(self) -> None:
        if self.shown is not None:
            self.table.keep_aside(self.shown.id, not self.shown.kept)

    def action_close(self) -> None:
        self.dismiss(None)
