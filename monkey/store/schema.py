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
- ``search_docs`` / ``search`` (the sessions-that-travel step): the text of each prompt
  (``turn_started``), answer with its tool calls (``message_completed``) and tool result
  (``tool_result``), with its session, event and turn, and an FTS5 index over it kept by
  triggers; the recorder adds the rows in the transaction that stores their events, and
  the step fills them for the events already stored.
- ``session_links``: what a session has to do with something outside it, one row per
  ``(session, kind)``: ``fork`` (the session it was forked from), ``claude`` / ``codex``
  (a Claude Code or Codex session exported to or imported from, with its file, size and
  time, so a re-export can tell whether Claude Code appended to it since).
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
    [  # sessions that travel: search, forks, Claude Code and Codex links (one self-contained step)
        """CREATE TABLE search_docs (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            turn INTEGER NOT NULL DEFAULT 0,
            kind TEXT NOT NULL,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX search_docs_by_session ON search_docs (session_id, seq)",
        "CREATE VIRTUAL TABLE search USING fts5(text, content='search_docs', content_rowid='id')",
        "CREATE TRIGGER search_docs_added AFTER INSERT ON search_docs BEGIN "
        "INSERT INTO search (rowid, text) VALUES (new.id, new.text); END",
        "CREATE TRIGGER search_docs_removed AFTER DELETE ON search_docs BEGIN "
        "INSERT INTO search (search, rowid, text) VALUES ('delete', old.id, old.text); END",
        """INSERT INTO search_docs (session_id, seq, turn, kind, text)
        SELECT session_id, seq, coalesce(turn, 0), type, substr(CASE type
            WHEN 'turn_started' THEN coalesce(json_extract(doc, '$.prompt'), '')
            WHEN 'tool_result' THEN coalesce(json_extract(doc, '$.name'), '') || ' '
                || coalesce(json_extract(doc, '$.output'), '')
            ELSE coalesce(json_extract(doc, '$.text'), '') || coalesce((SELECT group_concat(
                ' ' || json_extract(c.value, '$.name') || ' ' || coalesce(json_extract(c.value, '$.arguments'), ''), '')
                FROM json_each(doc, '$.tool_calls') c), '')
        END, 1, 32768)
        FROM (SELECT session_id, seq, type, CAST(data AS TEXT) AS doc,
                     max(CASE WHEN type = 'turn_started' THEN json_extract(CAST(data AS TEXT), '$.turn') END)
                         OVER (PARTITION BY session_id ORDER BY seq) AS turn
              FROM events WHERE type IN ('turn_started', 'message_completed', 'tool_result') AND n = 1)""",
        """CREATE TABLE session_links (
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            foreign_id TEXT NOT NULL,
            path TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0,
            mtime REAL NOT NULL DEFAULT 0,
            detail TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (session_id, kind)
        )""",
        "CREATE INDEX session_links_by_foreign ON session_links (kind, foreign_id)",
    ],
]
"""The store's migrations, oldest first."""
