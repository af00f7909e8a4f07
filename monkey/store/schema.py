"""The session store's tables in the shared database file (component ``store``).

``MIGRATIONS[i]`` upgrades the store's tables from version ``i`` to ``i + 1``; a database
whose ``store`` version is above ``len(MIGRATIONS)`` was written by a newer monkey and is
refused (see :func:`monkey.db.migrate`). Never edit a released migration: append one.

- ``sessions``: one row per session, keyed by id, looked up by workspace.
- ``events``: every event of the stream, exactly as ``stream-json`` prints it, numbered
  ``seq`` = 1, 2, 3 ... per session, each carrying a running hash of the chain. A run of
  consecutive streaming deltas of one type is one row of ``n`` events (version 2): ``data``
  is their JSON objects joined by newlines, ``seq`` and ``hash`` are the last one's, so a
  streamed answer costs a row per write, not per token.
- ``nodes``: the conversation as typed nodes (``user``, ``assistant``, ``tool``,
  ``summary``), also numbered and hash-chained; ``in_context`` says whether the node is
  sent to the model (compacted nodes stay, excluded).
- ``control`` (version 3): the answer to an approval, one per call of a session (the session
  that asks: a sub-agent's own), whoever gave it first: the person at the session's own front end or
  ``monkey web`` (see :mod:`monkey.store.control`).
"""

from __future__ import annotations

__all__ = ["COMPONENT", "MIGRATIONS"]

COMPONENT = "store"

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            backend TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            parent TEXT REFERENCES sessions(id) ON DELETE SET NULL,
            turns INTEGER NOT NULL DEFAULT 0,
            events INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            pid INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX sessions_by_workspace ON sessions (workspace, updated)",
        "CREATE INDEX sessions_by_updated ON sessions (updated)",
        """CREATE TABLE events (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            ts REAL NOT NULL,
            data BLOB NOT NULL,
            hash BLOB NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
        """CREATE TABLE nodes (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            in_context INTEGER NOT NULL DEFAULT 1,
            tokens INTEGER NOT NULL DEFAULT 0,
            event_seq INTEGER NOT NULL DEFAULT 0,
            data BLOB NOT NULL,
            hash BLOB NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
    ],
    ["ALTER TABLE events ADD COLUMN n INTEGER NOT NULL DEFAULT 1"],
    ["""CREATE TABLE control (
            session_id TEXT NOT NULL,
            call_id TEXT NOT NULL,
            answer BLOB NOT NULL,
            by TEXT NOT NULL,
            ts REAL NOT NULL,
            PRIMARY KEY (session_id, call_id)
        ) WITHOUT ROWID"""],
]
"""The store's migrations, oldest first."""
