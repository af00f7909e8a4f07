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

__all__ = ["INDEXED", "MAX_TEXT", "RECENT", "Hit", "index_text", "match_query", "search", "snippet"]

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


RECENT = 2000
"""How many of the most recent places holding the words are ranked (FTS5's bm25) for the best
ones: a word found everywhere costs the same as a rare one."""
_CONTEXT = 60


def snippet(text: str, words: list[str]) -> str:
    """The text around the first of ``words`` found, each of them marked ``[like this]``."""
    if not words:
        return text[: 2 * _CONTEXT]
    pattern = re.compile("|".join(rf"\b{re.escape(w)}\b" for w in words), re.IGNORECASE)
    first = pattern.search(text)
    start = max(0, first.start() - _CONTEXT) if first else 0
    piece = text[start : start + 2 * _CONTEXT + (first.end() - first.start() if first else 0)]
    marked = pattern.sub(lambda m: f"[{m.group(0)}]", piece)
    return ("…" if start else "") + " ".join(marked.split()) + ("…" if start + len(piece) < len(text) else "")


async def search(store: Any, text: str, *, workspace: str | None = None, limit: int = 20) -> list[Hit]:
    """The best ``limit`` places that hold every word of ``text`` (only ``workspace``'s sessions when
    given), best first among the :data:`RECENT` most recent ones; a query without a word finds nothing."""
    query = match_query(text)
    if not query:
        return []
    where = "search MATCH ?"
    params: tuple[Any, ...] = (query,)
    join = ""
    if workspace is not None:
        join = "JOIN search_docs w ON w.id = search.rowid JOIN sessions ws ON ws.id = w.session_id "
        where += " AND ws.workspace = ?"
        params += (workspace,)
    sql = (
        f"WITH recent AS (SELECT search.rowid AS id, rank FROM search {join}WHERE {where} "
        f"ORDER BY search.rowid DESC LIMIT {RECENT}), "
        f"best AS (SELECT id, rank FROM recent ORDER BY rank LIMIT {int(limit)}) "
        "SELECT d.session_id, d.turn, d.seq, d.kind, d.text, s.title, s.workspace "
        "FROM best JOIN search_docs d ON d.id = best.id JOIN sessions s ON s.id = d.session_id ORDER BY best.rank"
    )
    rows = await store.fetchall(sql, params, doing="search the sessions")
    words = _WORD.findall(text)
    return [
        Hit(sid, turn, seq, kind, snippet(body, words), title, ws) for sid, turn, seq, kind, body, title, ws in rows
    ]
