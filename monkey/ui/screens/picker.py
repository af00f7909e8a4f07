"""The session picker: this workspace's recent sessions, to resume or delete one, or the ones
whose prompts, answers, tool calls or results hold some words (``/`` searches).

Dismissed with the chosen session's id (Enter) or ``None`` (Esc). Titles are the first
prompt of a session, typed by a person or pasted from anywhere, so they are escaped and
never read as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

from monkey.safe_text import escape_controls
from monkey.store.store import SessionInfo, SessionStore, StoreError
from monkey.ui.screens.timeline import local_time

__all__ = ["SessionPickerScreen"]


def _title(info: SessionInfo, width: int = 44) -> str:
    text = escape_controls(" ".join(info.title.split()), keep_newlines=False) or "(untitled)"
    return text if len(text) <= width else text[: width - 1] + "…"


class SessionPickerScreen(ModalScreen[str | None]):
    """Recent sessions of one workspace, most recent first.

    Keys: Enter resume the selected session, ``x`` or Delete delete it (``y`` confirms,
    any other key keeps it; a session a running monkey writes, this one's included, is
    never deleted), ``/`` search (type words, Enter lists the sessions that hold them all,
    best first, with where they were found; an empty search lists them all again), Esc cancel.
    """

    CSS_PATH = "picker.tcss"
    BINDINGS = [
        Binding("enter", "resume", "resume"),
        Binding("x,delete", "delete", "delete"),
        Binding("slash", "search", "search"),
        Binding("escape", "cancel", "cancel"),
    ]

    def __init__(
        self, store: SessionStore, workspace: Path, *, limit: int = 50, format_time: Callable[[float], str] = local_time
    ) -> None:
        super().__init__()
        self.store = store
        """The session store to list from and delete in."""
        self.workspace = workspace
        """Only this workspace's sessions are listed."""
        self.limit = limit
        """How many sessions at most."""
        self.format_time = format_time
        """How times are shown (tests pass a fixed one)."""
        self.sessions: list[SessionInfo] = []
        """The sessions in the table, in order."""
        self.confirming: SessionInfo | None = None
        """The session waiting for ``y`` to be deleted."""
        self.query_text = ""
        """The words searched for (empty: the recent sessions)."""
        self.found: dict[str, str] = {}
        """Where each listed session holds the words searched for: ``turn N: snippet``."""

    def compose(self) -> ComposeResult:
        name = escape_controls(self.workspace.name or str(self.workspace), keep_newlines=False)
        yield Static(Text(f"Sessions in {name}", style="bold"), id="heading")
        search = Input(placeholder="search the sessions' text (Enter)", id="search")
        search.display = False
        yield search
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sessions", DataTable)
        table.add_columns("updated", "title", "turns", "cost", "state", "id")
        table.focus()
        self.load()

    @work(exclusive=True, group="sessions")
    async def load(self) -> None:
        """Read the sessions and fill the table."""
        try:
            self.sessions = await self.store.list_sessions(str(self.workspace.resolve()), limit=self.limit)
            if self.query_text:
                self.sessions = await self._matching(self.sessions)
        except StoreError as exc:
            self._status(Text(str(exc)))
            return
        table = self.query_one("#sessions", DataTable)
        row = table.cursor_row
        table.clear()
        for info in self.sessions:
            table.add_row(
                Text(self.format_time(info.updated)),
                Text(_title(info)),
                Text(str(info.turns)),
                Text(f"${info.cost_usd:.4f}"),
                Text(info.state),
                Text(escape_controls(info.id)),
                key=info.id,
            )
        if self.sessions:
            table.move_cursor(row=min(max(row, 0), len(self.sessions) - 1))
            self._status(
                self._found_text() if self.query_text else Text("Enter resume   x delete   / search   Esc cancel")
            )
        elif self.query_text:
            self._status(Text(f"No session here holds {self.query_text}   / searches again"))
        else:
            self._status(Text("No sessions in this workspace yet."))

    async def _matching(self, recent: list[SessionInfo]) -> list[SessionInfo]:
        """The sessions of this workspace whose text holds the words searched for, best first."""
        from monkey.store.search import search

        hits = await search(self.store, self.query_text, workspace=str(self.workspace.resolve()), limit=200)
        self.found = {}
        for hit in hits:
            self.found.setdefault(hit.session_id, f"turn {hit.turn}: {' '.join(hit.snippet.split())}")
        by_id = {info.id: info for info in recent}
        for sid in self.found:
            if sid not in by_id and (info := await self.store.get(sid)) is not None and info.parent is None:
                by_id[sid] = info
        return [by_id[sid] for sid in self.found if sid in by_id]

    def _found_text(self) -> Text:
        chosen = self.selected
        where = self.found.get(chosen.id, "") if chosen is not None else ""
        return Text(
            f"{len(self.sessions)} holding {self.query_text}: {escape_controls(where, keep_newlines=False)}"[:300]
        )

    def action_search(self) -> None:
        """Show the search field and type into it."""
        if self.confirming is not None:
            return
        field = self.query_one("#search", Input)
        field.display = True
        field.focus()

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_text = " ".join(event.value.split())
        field = self.query_one("#search", Input)
        if not self.query_text:
            field.display = False
        self.query_one("#sessions", DataTable).focus()
        self.load()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.query_text and self.confirming is None:
            self._status(self._found_text())

    def _status(self, text: Text) -> None:
        self.query_one("#status", Static).update(text)

    @property
    def selected(self) -> SessionInfo | None:
        """The session under the cursor."""
        row = self.query_one("#sessions", DataTable).cursor_row
        return self.sessions[row] if self.sessions and 0 <= row < len(self.sessions) else None

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_resume()

    def action_resume(self) -> None:
        """Dismiss with the selected session's id."""
        chosen = self.selected
        if chosen is not None and self.confirming is None:
            self.dismiss(chosen.id)

    def action_cancel(self) -> None:
        """Close without choosing (or drop a pending delete)."""
        if self.confirming is not None:
            self._keep()
        else:
            self.dismiss(None)

    def action_delete(self) -> None:
        """Ask to confirm the deletion of the selected session."""
        chosen = self.selected
        if chosen is None:
            return
        if chosen.state == "active":  # this app's own session, or another monkey's
            self.notify(
                f"session {chosen.id} is open in a running monkey process; not deleted",
                severity="warning",
                markup=False,
            )
            return
        self.confirming = chosen
        status = Text.assemble(
            ("Delete ", "bold"),
            _title(chosen, 40),
            f" ({chosen.id}) and its history? ",
            ("y", "bold"),
            " deletes, any other key keeps it",
        )
        self.query_one("#status", Static).add_class("confirm")
        self._status(status)

    def _keep(self) -> None:
        self.confirming = None
        self.query_one("#status", Static).remove_class("confirm")
        self._status(Text("kept   Enter resume   x delete   / search   Esc cancel"))

    async def on_key(self, event: Key) -> None:
        """While a delete waits for confirmation, ``y`` confirms and any other key cancels."""
        if self.confirming is None:
            return
        event.stop()
        event.prevent_default()
        if event.key != "y":
            self._keep()
            return
        doomed, self.confirming = self.confirming, None
        self.query_one("#status", Static).remove_class("confirm")
        try:
            await self.store.delete(doomed.id)
        except StoreError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.notify(f"deleted session {doomed.id}", markup=False)
        self.load()
