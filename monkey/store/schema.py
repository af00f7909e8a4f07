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
- ``stat_slots`` and ``stat_samples`` (version 4): the summary rows ``monkey stats`` reads, kept
  by the recorder in the same transactions as the events (see :mod:`monkey.store.tally`). The
  migration fills them from the events stored before: tokens, cost, turns, model calls, tool
  calls and their durations, approvals, undos, sub-agents, budgets and compactions (older
  events have no model-call timings, lines changed, or who refused a call: a refusal counts as
  failed there).
- ``control`` (version 5): the answer to an approval, one per call of a session (the session
  that asks: a sub-agent's own), whoever gave it first: the person at the session's own front end or
  ``monkey web`` (see :mod:`monkey.store.control`).
"""

from __future__ import annotations

__all__ = ["COMPONENT", "MIGRATIONS"]

COMPONENT = "store"

_SLOT = "(CAST(e.ts AS INTEGER) - CAST(e.ts AS INTEGER) % 900)"
_J = "json_extract(CAST(e.data AS TEXT), '$.{}')"


def _j(field: str) -> str:
    return _J.format(field)


_STATS = [
    """CREATE TABLE stat_slots (
            session_id TEXT NOT NULL,
            slot INTEGER NOT NULL,
            backend TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL DEFAULT '',
            turns INTEGER NOT NULL DEFAULT 0,
            model_calls INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
            cost_micros INTEGER NOT NULL DEFAULT 0,
            timed_calls INTEGER NOT NULL DEFAULT 0,
            call_us INTEGER NOT NULL DEFAULT 0,
            timed_output_tokens INTEGER NOT NULL DEFAULT 0,
            tool_calls INTEGER NOT NULL DEFAULT 0,
            tool_ok INTEGER NOT NULL DEFAULT 0,
            tool_failed INTEGER NOT NULL DEFAULT 0,
            tool_denied_rule INTEGER NOT NULL DEFAULT 0,
            tool_denied_person INTEGER NOT NULL DEFAULT 0,
            tool_cancelled INTEGER NOT NULL DEFAULT 0,
            approvals INTEGER NOT NULL DEFAULT 0,
            answers_approved INTEGER NOT NULL DEFAULT 0,
            answers_approved_session INTEGER NOT NULL DEFAULT 0,
            answers_approved_always INTEGER NOT NULL DEFAULT 0,
            answers_denied INTEGER NOT NULL DEFAULT 0,
            lines_added INTEGER NOT NULL DEFAULT 0,
            lines_removed INTEGER NOT NULL DEFAULT 0,
            files_changed INTEGER NOT NULL DEFAULT 0,
            undos INTEGER NOT NULL DEFAULT 0,
            subagents INTEGER NOT NULL DEFAULT 0,
            budgets INTEGER NOT NULL DEFAULT 0,
            compactions INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, slot, backend, model, tool)
        ) WITHOUT ROWID""",
    "CREATE INDEX stat_slots_by_slot ON stat_slots (slot)",
    """CREATE TABLE stat_samples (
            session_id TEXT NOT NULL,
            slot INTEGER NOT NULL,
            backend TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL,
            value REAL NOT NULL,
            n INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (session_id, slot, backend, model, tool, kind, value)
        ) WITHOUT ROWID""",
    "CREATE INDEX sessions_by_parent ON sessions (parent)",
    # the session's own rows (tool ''), from the events stored before
    f"""INSERT INTO stat_slots (session_id, slot, backend, model, tool, turns, model_calls, input_tokens,
            output_tokens, cache_read_tokens, cache_creation_tokens, cost_micros, undos, subagents, budgets,
            compactions)
        SELECT e.session_id, {_SLOT}, s.backend,
            CASE WHEN e.type = 'usage' AND COALESCE({_j("model")}, '') != '' THEN {_j("model")} ELSE s.model END,
            '',
            SUM(e.type = 'turn_started'), SUM(e.type = 'message_completed'),
            SUM(CASE WHEN e.type = 'usage' THEN MAX(0, COALESCE({_j("input_tokens")}, 0)) ELSE 0 END),
            SUM(CASE WHEN e.type = 'usage' THEN MAX(0, COALESCE({_j("output_tokens")}, 0)) ELSE 0 END),
            SUM(CASE WHEN e.type = 'usage' THEN MAX(0, COALESCE({_j("cache_read_tokens")}, 0)) ELSE 0 END),
            SUM(CASE WHEN e.type = 'usage' THEN MAX(0, COALESCE({_j("cache_creation_tokens")}, 0)) ELSE 0 END),
            SUM(CASE WHEN e.type = 'usage' THEN CAST(ROUND(MAX(0, COALESCE({_j("cost_usd")}, 0)) * 1000000) AS INTEGER)
                ELSE 0 END),
            SUM(e.type = 'undo_applied'), SUM(e.type = 'subagent_started'), SUM(e.type = 'budget_reached'),
            SUM(e.type = 'context_compacted')
        FROM events e JOIN sessions s ON s.id = e.session_id
        WHERE e.type IN ('turn_started', 'message_completed', 'usage', 'undo_applied', 'subagent_started',
                         'budget_reached', 'context_compacted')
        GROUP BY 1, 2, 3, 4""",
    # the tools' rows
    f"""INSERT INTO stat_slots (session_id, slot, backend, model, tool, tool_calls, tool_ok, tool_failed, approvals,
            answers_approved, answers_approved_session, answers_approved_always, answers_denied)
        SELECT e.session_id, {_SLOT}, s.backend, s.model, COALESCE(NULLIF({_j("name")}, ''), '?'),
            SUM(e.type = 'tool_result'), SUM(e.type = 'tool_result' AND {_j("ok")}),
            SUM(e.type = 'tool_result' AND NOT {_j("ok")}),
            SUM(e.type = 'approval_requested'),
            SUM(e.type = 'approval_resolved' AND {_j("by")} = 'user' AND {_j("decision")} = 'approved'),
            SUM(e.type = 'approval_resolved' AND {_j("by")} = 'user' AND {_j("decision")} = 'approved_session'),
            SUM(e.type = 'approval_resolved' AND {_j("by")} = 'user' AND {_j("decision")} = 'approved_always'),
            SUM(e.type = 'approval_resolved' AND {_j("by")} = 'user' AND {_j("decision")} = 'denied')
        FROM events e JOIN sessions s ON s.id = e.session_id
        WHERE e.type IN ('tool_result', 'approval_requested', 'approval_resolved')
        GROUP BY 1, 2, 3, 4, 5""",
    f"""INSERT INTO stat_samples (session_id, slot, backend, model, tool, kind, value, n)
        SELECT e.session_id, {_SLOT}, s.backend, s.model, COALESCE(NULLIF({_j("name")}, ''), '?'), 'tool',
            MAX(0, COALESCE({_j("duration_ms")}, 0)), COUNT(*)
        FROM events e JOIN sessions s ON s.id = e.session_id WHERE e.type = 'tool_result'
        GROUP BY 1, 2, 3, 4, 5, 6, 7""",
    f"""INSERT INTO stat_samples (session_id, slot, backend, model, tool, kind, value, n)
        SELECT e.session_id, {_SLOT}, s.backend, s.model, COALESCE(NULLIF({_j("name")}, ''), '?'), 'answer',
            {_j("wait_ms")}, COUNT(*)
        FROM events e JOIN sessions s ON s.id = e.session_id
        WHERE e.type = 'tool_result' AND COALESCE({_j("wait_ms")}, 0) > 0
        GROUP BY 1, 2, 3, 4, 5, 6, 7""",
]


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
    _STATS,
    [
        """CREATE TABLE control (
            session_id TEXT NOT NULL,
            call_id TEXT NOT NULL,
            answer BLOB NOT NULL,
            by TEXT NOT NULL,
            ts REAL NOT NULL,
            PRIMARY KEY (session_id, call_id)
        ) WITHOUT ROWID"""
    ],
]
"""The store's migrations, oldest first."""
