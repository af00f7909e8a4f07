"""Reading the store while other processes write it: every session, what each is doing now, and
a session's events after a sequence number (for ``monkey web``'s lists and live streams).

Every query is cheap on a file other processes write (WAL: readers never wait for a writer):
events are read by ``(session_id, seq)``, the table's key, and a session's state only from the
events since its last ``turn_started``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from monkey.store.store import _SESSION_COLUMNS, SessionInfo, SessionStore

__all__ = ["ENDED", "IDLE", "RUNNING", "WAITING", "Live", "all_sessions", "events_after", "live_state"]

RUNNING = "running"
WAITING = "waiting"
"""Waiting for a person: an approval asked and not answered yet."""
IDLE = "idle"
ENDED = "ended"

_STATE_TYPES = (
    "turn_started",
    "turn_completed",
    "approval_requested",
    "approval_resolved",
    "tool_result",
    "session_ended",
)


@dataclass
class Live:
    """What a session is doing now: its :data:`RUNNING` / :data:`WAITING` / :data:`IDLE` / :data:`ENDED`
    state and the approvals that wait for a person (the ``approval_requested`` events, as stored)."""

    state: str
    pending: list[dict[str, Any]] = field(default_factory=list)


async def all_sessions(store: SessionStore) -> list[SessionInfo]:
    """Every session of every workspace, sub-agents' included, most recently updated first."""
    rows = await store.fetchall(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY updated DESC, id DESC")
    return [store._info(row) for row in rows]


async def events_after(
    store: SessionStore, session_id: str, after: int, *, limit: int = 2000
) -> list[tuple[int, str, bytes]]:
    """``(seq, type, JSON)`` of the session's events numbered above ``after``, in order, at most
    about ``limit`` (a stored run of deltas is given whole, each delta with its own number)."""
    rows = await store.fetchall(
        "SELECT seq, type, data, n FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (session_id, after, limit),
        doing="read the session's events",
    )
    out: list[tuple[int, str, bytes]] = []
    for seq, kind, data, n in rows:
        if n == 1:
            out.append((seq, kind, bytes(data)))
            continue
        parts = bytes(data).split(b"\n")
        first = seq - len(parts) + 1
        out += [(first + i, kind, part) for i, part in enumerate(parts) if first + i > after]
    return out


async def live_state(store: SessionStore, info: SessionInfo) -> Live:
    """What ``info``'s session is doing now, read from its events since its last turn began."""
    if info.status != "active" or not info.owned:
        return Live(ENDED)
    rows = await store.fetchall(
        "SELECT type, data FROM events WHERE session_id = ? AND seq >= "
        "(SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ? AND type = 'turn_started') "
        f"AND type IN ({', '.join('?' * len(_STATE_TYPES))}) ORDER BY seq",
        (info.id, info.id, *_STATE_TYPES),
        doing="read the session's state",
    )
    running = False
    asked: dict[str, dict[str, Any]] = {}
    for kind, data in rows:
        if kind == "turn_started":
            running = True
        elif kind in ("turn_completed", "session_ended"):
            running = False
            asked.clear()
        elif kind == "approval_requested":
            event = msgspec.json.decode(bytes(data))
            asked[event.get("call_id", "")] = event
        else:  # approval_resolved, tool_result: the question is answered (or gone)
            asked.pop(msgspec.json.decode(bytes(data)).get("call_id", ""), None)
    if asked and running:
        return Live(WAITING, list(asked.values()))
    return Live(RUNNING if running else IDLE)
