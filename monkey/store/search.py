"""Full-text search over stored sessions (SQLite FTS5) and the text each event gives the index.

The ``search_docs`` rows (see :mod:`monkey.store.schema`) are added by the
:class:`~monkey.store.recorder.Recorder` in the transaction that stores their events, from
:func:`index_text`: a prompt, an answer with its tool calls (name and arguments), a tool
result (name and output), each cut at :data:`MAX_TEXT` characters. :func:`search` finds the
rows whose text holds every word of a query, best first, with the session, turn and a snippet.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import msgspec

from monkey import events as ev

__all__ = ["INDEXED", "MAX_TEXT", "Hit", "index_text", "match_query", "search"]

INDEXED = frozenset({"turn_started", "message_completed", "tool_result"})
"""Event types whose text is searchable."""
MAX_TEXT = 32768
"""Characters of one event's text that are indexed (a long tool output is found by its start)."""
_encode = msgspec.json.encode
_WORD = re.compile(r"\w+", re.UNICODE)


def index_text(event: ev.Event) -> str | None:
    """The searchable text of ``event`` (None for a type that is not indexed)."""
    match event:
        case ev.TurnStarted():
            text = event.prompt
        case ev.MessageCompleted():
            text = event.text + "".join(f" {c.name} {_encode(c.arguments).decode()}" for c in event.tool_calls)
        case ev.ToolResult():
            text = f"{event.name} {event.output}"
        case _:
            return None
    return text[:MAX_TEXT]


def match_query(text: str) -> str:
    """An FTS5 query for ``text``: every word must be there (each quoted, so no word is read as
    FTS5 syntax); ``""`` when ``text`` has no word."""
    return " ".join(f'"{w}"' for w in _WORD.findall(text))


@dataclass
class Hit:
    """One place a query was found."""

    session_id: str
    turn: int
    seq: int
    """The event's number in its session."""
    kind: str
    """The event's type: ``turn_started`` (a prompt), ``message_completed`` (an answer and its
    tool calls) or ``tool_result``."""
    snippet: str
    """The text around the words found, each marked ``[like this]``."""
    title: str
    workspace: str

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON-ready data."""
        return asdict(self)


async def search(store: Any, text: str, *, workspace: str | None = None, limit: int = 20) -> list[Hit]:
    """The best ``limit`` places that hold every word of ``text`` (only ``workspace``'s sessions when
    given), best first; a query without a word finds nothing."""
    query = match_query(text)
    if not query:
        return []
    sql = ("SELECT d.session_id, d.turn, d.seq, d.kind, snippet(search, 0, '[', ']', '…', 16), s.title, s.workspace "
           "FROM search JOIN search_docs d ON d.id = search.rowid JOIN sessions s ON s.id = d.session_id "
           "WHERE search MATCH ?")
    params: tuple[Any, ...] = (query,)
    if workspace is not None:
        sql += " AND s.workspace = ?"
        params += (workspace,)
    sql += f" ORDER BY rank LIMIT {int(limit)}"
    rows = await store.fetchall(sql, params, doing="search the sessions")
    return [Hit(*row) for row in rows]
