"""The checkpoint timeline: every change monkey made, its diff, undo and restore.

What happened is reported two ways, so the app can pick: each successful undo or
restore posts :class:`TimelineScreen.Undone` (it bubbles to the app) and is kept in
:attr:`TimelineScreen.applied`; the screen is dismissed with that list when closed.
Undo and restore run in a thread worker: they read and write files and a git repository
(so the ``emit`` callback of the :class:`Checkpoints` given is called from that thread).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from monkey.checkpoints.api import CheckpointInfo, Checkpoints, undo_event
from monkey.checkpoints.undo import UndoConflict, UndoError
from monkey.events import UndoApplied
from monkey.safe_text import escape_controls
from monkey.ui.screens.diff_text import diff_text

__all__ = ["TimelineScreen", "local_time"]


def local_time(ts: float) -> str:
    """A timestamp as local ``YYYY-MM-DD HH:MM:SS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


@dataclass(frozen=True)
class _Operation:
    """An undo or restore the person asked for (kept to retry it with force)."""

    kind: str
    """``undo`` (the latest change) or ``restore`` (back to :attr:`target`)."""
    target: str = ""
    label: str = ""


class TimelineScreen(ModalScreen[list[UndoApplied]]):
    """The checkpoints of a session (or of the whole workspace), oldest first.

    Keys: Enter or ``d`` show the selected change's diff, ``u`` undo the latest change,
    ``r`` restore to the selected checkpoint, ``f`` force the refused operation, Esc close
    the diff or the screen. Dismissed with the :class:`UndoApplied` events of this visit.
    """

    CSS_PATH = "timeline.tcss"
    BINDINGS = [
        Binding("d", "show_diff", "diff"),
        Binding("u", "undo", "undo latest"),
        Binding("r", "restore", "restore to selected"),
        Binding("f", "force", "force", show=False),
        Binding("escape", "close", "close"),
    ]

    class Undone(Message):
        """An undo or restore was applied (bubbles to the app)."""

        def __init__(self, event: UndoApplied) -> None:
            super().__init__()
            self.event = event
            """The ``undo_applied`` event, as the checkpoint API emits it."""

    def __init__(
        self,
        checkpoints: Checkpoints,
        session_id: str | None = None,
        *,
        format_time: Callable[[float], str] = local_time,
    ) -> None:
        super().__init__()
        self.checkpoints = checkpoints
        """The checkpoint API of the workspace."""
        self.session_id = session_id
        """Only this session's checkpoints, or None for the whole workspace."""
        self.format_time = format_time
        """How times are shown (tests pass a fixed one)."""
        self.applied: list[UndoApplied] = []
        """Every undo or restore applied while the screen was open."""
        self.infos: list[CheckpointInfo] = []
        """The checkpoints in the table, oldest first."""
        self.refused: _Operation | None = None
        """The operation refused because files changed since; ``f`` forces it."""
        self.busy = False
        """Whether an undo or restore is running."""
        self.loaded = False
        """Whether the list was read at least once."""

    def compose(self) -> ComposeResult:
        scope = f"session {escape_controls(self.session_id)}" if self.session_id else "this workspace"
        yield Static(Text(f"Checkpoints of {scope}", style="bold"), id="heading")
        yield DataTable(id="table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="detail"):
            yield Static(id="detail-title")
            yield Static(id="detail-body")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#table", DataTable)
        table.add_columns("#", "time", "tool", "state", "+/-", "paths")
        self.refresh_list()

    # -- the list --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="list")
    def refresh_list(self) -> None:
        """Read the checkpoints again (off the UI thread: it reads a git repository) and show them."""
        try:
            infos = self.checkpoints.list(self.session_id)
        except Exception as exc:  # a damaged journal or shadow repository: say so, keep the app
            self.app.call_from_thread(
                self.notify, f"cannot list the checkpoints: {exc}", severity="error", markup=False
            )
            infos = []
        self.app.call_from_thread(self._fill, infos)

    def _fill(self, infos: list[CheckpointInfo]) -> None:
        """Show ``infos`` in the table, keeping the cursor on the same row."""
        table = self.query_one("#table", DataTable)
        row = table.cursor_row if self.loaded else -1  # first time: the latest change
        self.infos = infos
        table.clear()
        for n, info in enumerate(self.infos, 1):
            stats = "binary" if info.binary and not (info.added or info.removed) else f"+{info.added} -{info.removed}"
            paths = ", ".join(escape_controls(p, keep_newlines=False) for p in info.paths) or "(unknown)"
            table.add_row(
                Text(str(n)),
                Text(self.format_time(info.created_at)),
                Text(escape_controls(info.tool)),
                Text(info.state),
                Text(stats),
                Text(paths),
                key=info.id,
            )
        if not self.infos:
            self.show_detail(Text("No checkpoints yet"), Text("monkey takes one before every change it makes."))
        elif 0 <= row < len(self.infos):
            table.move_cursor(row=row)
        else:
            table.move_cursor(row=len(self.infos) - 1)
        self.loaded = True

    @property
    def selected(self) -> tuple[int, CheckpointInfo] | None:
        """The selected checkpoint and its number (1-based), if any."""
        table = self.query_one("#table", DataTable)
        if not self.infos or not 0 <= table.cursor_row < len(self.infos):
            return None
        return table.cursor_row + 1, self.infos[table.cursor_row]

    # -- the detail pane -------------------------------------------------------------------

    def show_detail(self, title: Text, body: Text, *, refusal: bool = False) -> None:
        """Show the detail pane with a title and a body (styled as a warning for a refusal)."""
        self.query_one("#detail-title", Static).update(title)
        self.query_one("#detail-body", Static).update(body)
        detail = self.query_one("#detail", VerticalScroll)
        detail.set_class(refusal, "refusal")
        detail.display = True
        detail.scroll_home(animate=False)

    def hide_detail(self) -> None:
        """Hide the detail pane (and forget a refused operation)."""
        self.refused = None
        self.query_one("#detail", VerticalScroll).display = False

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_show_diff()

    def action_show_diff(self) -> None:
        """Show the diff of the selected checkpoint."""
        chosen = self.selected
        if chosen is None:
            return
        n, info = chosen
        try:
            text = self.checkpoints.show(info.id)
        except UndoError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        # show() starts with a header (id, time, session) ended by a blank line; this pane
        # writes its own header with the screen's time format.
        body = text.split("\n\n", 1)[1] if "\n\n" in text else text
        self.refused = None
        title = Text.assemble(
            (f"#{n} ", "bold"),
            (escape_controls(info.tool), "bold"),
            f"  {info.state}  {self.format_time(info.created_at)}  turn {info.turn}",
        )
        if info.note:
            title.append(f"\nnote: {escape_controls(info.note)}")
        self.show_detail(title, diff_text(body.rstrip("\n") or "(no textual change)"))

    def action_close(self) -> None:
        """Close the diff pane, or the screen when no pane is open."""
        if self.query_one("#detail", VerticalScroll).display and self.infos:
            self.hide_detail()
        else:
            self.dismiss(self.applied)

    # -- undo and restore ------------------------------------------------------------------

    def action_undo(self) -> None:
        """Undo the latest applied change (of the session, when the screen shows one)."""
        self._start(_Operation("undo", label="undo of the latest change"))

    def action_restore(self) -> None:
        """Put every file changed at or after the selected checkpoint back as it was then."""
        chosen = self.selected
        if chosen is not None:
            n, info = chosen
            self._start(_Operation("restore", info.id, f"restore to checkpoint #{n}"))

    def action_force(self) -> None:
        """Run the refused operation again, overwriting the changes made since."""
        if self.refused is not None:
            self._start(self.refused, force=True)

    def _start(self, op: _Operation, *, force: bool = False) -> None:
        if self.busy:
            self.notify("an undo is already running", severity="warning")
            return
        self.busy = True
        self._apply(op, force)

    @work(thread=True, exclusive=True, group="undo")
    def _apply(self, op: _Operation, force: bool) -> None:
        """Run the undo off the UI thread; report back on it."""
        try:
            if op.kind == "undo":
                outcome = self.checkpoints.undo(steps=1, session_id=self.session_id, force=force)
            else:
                outcome = self.checkpoints.restore(op.target, force=force)
        except UndoConflict as exc:
            self.app.call_from_thread(self._refused, op, exc)
        except UndoError as exc:
            self.app.call_from_thread(self._failed, op, str(exc))
        except Exception as exc:  # a file that cannot be written, a damaged shadow repository
            self.app.call_from_thread(self._failed, op, f"{op.label} failed: {exc}")
        else:
            event = undo_event(outcome, self.session_id or "")
            try:
                infos = self.checkpoints.list(self.session_id)
            except Exception:
                infos = self.infos
            self.app.call_from_thread(self._done, op, event, infos)

    def _done(self, op: _Operation, event: UndoApplied, infos: list[CheckpointInfo]) -> None:
        self.busy = False
        self.applied.append(event)
        self.post_message(self.Undone(event))
        what = ", ".join(event.paths) or "nothing"
        self.notify(f"{op.label}{' (forced)' if event.forced else ''}: {what}", title="undone", markup=False)
        self.hide_detail()
        self._fill(infos)

    def _failed(self, op: _Operation, message: str) -> None:
        self.busy = False
        self.notify(message, title=f"{op.label} failed", severity="error", markup=False)

    def _refused(self, op: _Operation, exc: UndoConflict) -> None:
        self.busy = False
        title = Text(escape_controls(str(exc)), style="bold")
        title.append(
            "\nf forces it (what changed since is overwritten; the diff below is lost)   "
            "Esc keeps the files as they are",
            style="",
        )
        diff = "\n".join(f"# {c.reason}\n{c.diff.rstrip()}" for c in exc.conflicts)
        self.show_detail(title, diff_text(diff), refusal=True)
        self.refused = op
        self.notify(f"{op.label} refused: files changed since", severity="warning", markup=False)
