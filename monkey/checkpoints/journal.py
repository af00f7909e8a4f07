"""The operation journal: every change monkey makes, written ahead of the change.

It lives in monkey's shared SQLite file (component ``journal``; the session store keeps
its own tables there). An entry is written ``pending`` before a change happens and
becomes ``applied`` after it, with the content hash (git blob id) of every touched path
before and after; an undo is an entry too (kind ``undo``). An entry still ``pending``
when its process is gone is repaired at the next start (see ``guard.repair``).

States: ``pending`` (the change may be happening), ``applied`` (done, undoable),
``unchanged`` (the tool ran and changed nothing), ``failed`` (the tool failed and changed
nothing), ``abandoned`` (the process died before changing anything), ``undone`` (reverted
by the undo named in ``undone_by``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from monkey.db import DatabaseError, connect, explain, migrate

__all__ = ["Journal", "Entry", "FileRecord", "COMPONENT"]

COMPONENT = "journal"

MIGRATIONS = [
    [
        """CREATE TABLE journal_entries (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            kind TEXT NOT NULL,
            tool TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            turn INTEGER NOT NULL DEFAULT 0,
            call_id TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            checkpoint TEXT NOT NULL DEFAULT '',
            after_commit TEXT NOT NULL DEFAULT '',
            before_tree TEXT NOT NULL DEFAULT '',
            after_tree TEXT NOT NULL DEFAULT '',
            owner TEXT NOT NULL DEFAULT '',
            undone_by TEXT NOT NULL DEFAULT '',
            note TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        "CREATE INDEX journal_entries_workspace ON journal_entries (workspace, created_at)",
        """CREATE TABLE journal_files (
            entry_id TEXT NOT NULL REFERENCES journal_entries(id) ON DELETE CASCADE,
            path BLOB NOT NULL,
            before_sha TEXT,
            before_mode INTEGER NOT NULL DEFAULT 0,
            after_sha TEXT,
            after_mode INTEGER NOT NULL DEFAULT 0,
            created INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            created_dirs TEXT NOT NULL DEFAULT '[]',
            exact_mode INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (entry_id, path)
        )""",
    ],
    [
        "ALTER TABLE journal_files ADD COLUMN unattributed TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE journal_entries ADD COLUMN unrecorded TEXT NOT NULL DEFAULT '[]'",
    ],
]


@dataclass
class FileRecord:
    """One path of an entry: its content id and mode before and after (None: absent)."""

    path: str
    before_sha: str | None
    before_mode: int = 0
    after_sha: str | None = None
    after_mode: int = 0
    created_dirs: list[str] = field(default_factory=list)
    """Folders that did not exist before the change (removed again by an undo if empty)."""
    exact_mode: bool = True
    """False when only git's mode is known (100644/100755/120000), as for shell changes."""
    unattributed: str = ""
    """Why monkey cannot be sure this change was its own ("" when it is): undo leaves the path alone."""

    @property
    def created(self) -> bool:
        """The change created the path."""
        return self.before_sha is None and self.after_sha is not None

    @property
    def deleted(self) -> bool:
        """The change deleted the path."""
        return self.before_sha is not None and self.after_sha is None


@dataclass
class Entry:
    """One journal entry (a change monkey made, or an undo)."""

    id: str
    workspace: str
    kind: str
    state: str
    tool: str = ""
    session_id: str = ""
    turn: int = 0
    call_id: str = ""
    checkpoint: str = ""
    """The commit holding the state before the change."""
    after_commit: str = ""
    before_tree: str = ""
    after_tree: str = ""
    owner: str = ""
    undone_by: str = ""
    note: str = ""
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    unrecorded: list[list[str]] = field(default_factory=list)
    """``[path, reason]`` of changes the entry's tool made that monkey could not record, so cannot undo."""
    files: list[FileRecord] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        """The paths the entry touched."""
        return [f.path for f in self.files]

    def not_undoable(self) -> list[str]:
        """``"path: why"`` of what the change did that undo cannot revert: changes monkey could
        not record (too large, nested repositories) and paths it cannot attribute to itself."""
        return [f"{path}: {why}" for path, why in self.unrecorded] + [
            f"{r.path}: not attributable to monkey: {r.unattributed}" for r in self.files if r.unattributed
        ]

    @property
    def checkpoint_id(self) -> str:
        """The id people use for this checkpoint (the entry id)."""
        return self.id


_ENTRY_COLS = (
    "id, workspace, kind, state, tool, session_id, turn, call_id, checkpoint, after_commit, "
    "before_tree, after_tree, owner, undone_by, note, created_at, updated_at, unrecorded"
)


class Journal:
    """The journal tables of monkey's database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.unwritable = ""
        """Why the file cannot be written ('' when it can): then it is read as it is, and every write fails with this."""
        try:
            self.conn = connect(path)
            migrate(self.conn, COMPONENT, MIGRATIONS, path=path)
        except DatabaseError as exc:
            if "newer monkey" in str(exc) or "damaged" in str(exc) or not path.exists():
                raise
            self._open_read_only(str(exc))

    def _open_read_only(self, why: str) -> None:
        """A file nothing can be written to (a full disk, a read-only home): listing still works."""
        from monkey.db import connect_readonly, migrate_version

        with contextlib.suppress(Exception):
            self.conn.close()
        self.conn = connect_readonly(self.path)
        if migrate_version(self.conn, COMPONENT) != len(MIGRATIONS):
            self.conn.close()
            raise DatabaseError(f"{why}; and its checkpoint journal cannot be read as it is")
        self.unwritable = why

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; an sqlite failure (a full disk, a read-only file) is a clear
        :class:`~monkey.db.DatabaseError`, and nothing of the transaction is kept."""
        if self.unwritable:
            raise DatabaseError(self.unwritable)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise DatabaseError(f"cannot write the checkpoint journal: {explain(exc, self.path)}") from None

    # -- writing ---------------------------------------------------------------------

    def add(self, entry: Entry, *, claim: Iterable[str] = ()) -> None:
        """Write a new entry with its files; an undo ``claim``s the entries it reverts."""
        with self._tx() as c:
            c.executemany("UPDATE journal_entries SET undone_by = ? WHERE id = ?", [(entry.id, i) for i in claim])
            c.execute(
                f"INSERT INTO journal_entries ({_ENTRY_COLS}) VALUES ({', '.join('?' * 18)})",
                (
                    entry.id,
                    entry.workspace,
                    entry.kind,
                    entry.state,
                    entry.tool,
                    entry.session_id,
                    entry.turn,
                    entry.call_id,
                    entry.checkpoint,
                    entry.after_commit,
                    entry.before_tree,
                    entry.after_tree,
                    entry.owner,
                    entry.undone_by,
                    entry.note,
                    entry.created_at,
                    entry.updated_at,
                    json.dumps(entry.unrecorded),
                ),
            )
            self._put_files(c, entry.id, entry.files)

    @staticmethod
    def _put_files(c: sqlite3.Connection, entry_id: str, files: Iterable[FileRecord]) -> None:
        c.execute("DELETE FROM journal_files WHERE entry_id = ?", (entry_id,))
        c.executemany(
            "INSERT INTO journal_files (entry_id, path, before_sha, before_mode, after_sha, after_mode, "
            "created, deleted, created_dirs, exact_mode, unattributed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    entry_id,
                    os.fsencode(f.path),
                    f.before_sha,
                    f.before_mode,
                    f.after_sha,
                    f.after_mode,
                    int(f.created),
                    int(f.deleted),
                    json.dumps(f.created_dirs),
                    int(f.exact_mode),
                    f.unattributed,
                )
                for f in files
            ],
        )

    def finish(self, entry: Entry) -> None:
        """Store an entry's new state, commits, note and files in one transaction."""
        entry.updated_at = time.time()
        with self._tx() as c:
            c.execute(
                "UPDATE journal_entries SET state = ?, after_commit = ?, after_tree = ?, note = ?, "
                "updated_at = ?, unrecorded = ? WHERE id = ?",
                (
                    entry.state,
                    entry.after_commit,
                    entry.after_tree,
                    entry.note,
                    entry.updated_at,
                    json.dumps(entry.unrecorded),
                    entry.id,
                ),
            )
            self._put_files(c, entry.id, entry.files)

    def finish_undo(self, undo: Entry) -> None:
        """Mark an undo done: the entries it claimed become ``undone`` (or free again if it failed)."""
        now = time.time()
        with self._tx() as c:
            c.execute(
                "UPDATE journal_entries SET state = ?, note = ?, updated_at = ? WHERE id = ?",
                (undo.state, undo.note, now, undo.id),
            )
            if undo.state == "applied":
                c.execute(
                    "UPDATE journal_entries SET state = 'undone', updated_at = ? WHERE undone_by = ?", (now, undo.id)
                )
            else:
                c.execute("UPDATE journal_entries SET undone_by = '' WHERE undone_by = ?", (undo.id,))

    def delete(self, ids: Iterable[str]) -> None:
        """Forget entries (gc)."""
        with self._tx() as c:
            c.executemany("DELETE FROM journal_entries WHERE id = ?", [(i,) for i in ids])

    # -- reading ---------------------------------------------------------------------

    def _load(self, rows: list[tuple]) -> list[Entry]:
        entries = [Entry(*row[:-1]) for row in rows]  # the last column is ``unrecorded``, as JSON
        for entry, row in zip(entries, rows, strict=True):
            entry.unrecorded = json.loads(row[-1])
        if not entries:
            return entries
        by_id = {e.id: e for e in entries}
        marks = ", ".join("?" * len(by_id))
        for row in self.conn.execute(
            "SELECT entry_id, path, before_sha, before_mode, after_sha, after_mode, created_dirs, exact_mode, "
            "unattributed "
            f"FROM journal_files WHERE entry_id IN ({marks}) ORDER BY rowid",
            list(by_id),
        ):
            by_id[row[0]].files.append(
                FileRecord(
                    os.fsdecode(row[1]), row[2], row[3], row[4], row[5], json.loads(row[6]), bool(row[7]), row[8]
                )
            )
        return entries

    def overlapping(self, workspace: str, start: float, end: float, *, exclude: str) -> list[Entry]:
        """Other entries (changes and undos) of a workspace whose time overlaps ``[start, end]`` (pending ones included)."""
        rows = self.conn.execute(
            f"SELECT {_ENTRY_COLS} FROM journal_entries WHERE workspace = ? AND kind IN ('change', 'undo') AND id != ? "
            "AND created_at <= ? AND (state = 'pending' OR updated_at >= ?) ORDER BY rowid",
            (workspace, exclude, end, start),
        ).fetchall()
        return self._load(rows)

    def undone_by(self, undo_id: str) -> list[str]:
        """The ids of the entries an undo claimed, oldest first."""
        rows = self.conn.execute("SELECT id FROM journal_entries WHERE undone_by = ? ORDER BY rowid", (undo_id,))
        return [r[0] for r in rows]

    def get(self, entry_id: str) -> Entry | None:
        """One entry by its full id."""
        rows = self.conn.execute(f"SELECT {_ENTRY_COLS} FROM journal_entries WHERE id = ?", (entry_id,)).fetchall()
        loaded = self._load(rows)
        return loaded[0] if loaded else None

    def find(self, workspace: str, part: str) -> list[Entry]:
        """Entries of a workspace whose id starts or ends with ``part``."""
        escaped = part.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.conn.execute(
            f"SELECT {_ENTRY_COLS} FROM journal_entries WHERE workspace = ? "
            "AND (id LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\') ORDER BY rowid",
            (workspace, escaped + "%", "%" + escaped),
        ).fetchall()
        return self._load(rows)

    def entries(
        self,
        workspace: str,
        *,
        kind: str | None = "change",
        states: Iterable[str] | None = None,
        session_id: str | None = None,
    ) -> list[Entry]:
        """Entries of a workspace, oldest first."""
        sql = f"SELECT {_ENTRY_COLS} FROM journal_entries WHERE workspace = ?"
        params: list[object] = [workspace]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        if states is not None:
            wanted = list(states)
            sql += f" AND state IN ({', '.join('?' * len(wanted))})"
            params += wanted
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        sql += " ORDER BY rowid"
        return self._load(self.conn.execute(sql, params).fetchall())
