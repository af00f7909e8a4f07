"""Answers to approvals given outside the process that asks (``monkey web``), through the store.

The process that runs a session asks its person (the app's dialog, the terminal's prompt) and
also watches the ``control`` table for an answer to the same call; the first answer stored
wins (the table's key is the asking session and the call: ``INSERT OR IGNORE``), so a browser and
a terminal answering at once agree on one, and each side can say who answered. Stored before it
acts, an answer survives either side being killed.

The same table carries what ``monkey web`` asks of a running session (cancel its turn, switch its
mode): a request is a row ``do:ID`` of the session, and the process that runs it, reading the table
every 100 ms, does it through the session's own paths and stores ``done:ID`` with what came of it. A
process takes only the requests stored since it opened the session, so one left by a process that
was killed is never done by the next one to open the session.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import msgspec

from monkey.store.store import SessionStore

__all__ = ["answer_for", "claim", "claim_now", "finish", "outcome", "request", "requests_since"]

_INSERT = "INSERT OR IGNORE INTO control (session_id, call_id, answer, by, ts) VALUES (?, ?, ?, ?, ?)"
_SELECT = "SELECT answer, by FROM control WHERE session_id = ? AND call_id = ?"


async def claim(store: SessionStore, session_id: str, call_id: str, answer: dict[str, Any], by: str) -> dict[str, Any]:
    """Store ``answer`` to ``call_id`` of session ``session_id`` unless one is there;
    the answer that holds (``answer`` with ``by``, or the one stored first)."""
    await store.write(
        [(_INSERT, (session_id, call_id, msgspec.json.encode(answer), by, time.time()), False)],
        doing="store the answer",
        sync=True,
    )
    held = await answer_for(store, session_id, call_id)
    assert held is not None
    return held


async def answer_for(store: SessionStore, session_id: str, call_id: str) -> dict[str, Any] | None:
    """The answer stored for the call (with ``by``: who gave it), or None."""
    rows = await store.fetchall(_SELECT, (session_id, call_id), doing="read the answers")
    if not rows:
        return None
    return {**msgspec.json.decode(bytes(rows[0][0])), "by": rows[0][1]}


def claim_now(
    conn: sqlite3.Connection, session_id: str, call_id: str, answer: dict[str, Any], by: str
) -> dict[str, Any]:
    """:func:`claim` on a plain connection, at once: for the process whose person just answered, so
    nothing else of it runs between the answer and its use (one short transaction, as the
    checkpoint journal writes). Raises :class:`sqlite3.Error`."""
    with conn:
        conn.execute(_INSERT, (session_id, call_id, msgspec.json.encode(answer), by, time.time()))
    row = conn.execute(_SELECT, (session_id, call_id)).fetchone()
    return {**msgspec.json.decode(bytes(row[0])), "by": row[1]}


async def request(store: SessionStore, session_id: str, action: dict[str, Any], by: str) -> str:
    """Store a request for the process that runs ``session_id`` (``{"action": "cancel"}``,
    ``{"action": "mode", "mode": NAME}``); its id."""
    from monkey.ids import new_id

    rid = new_id()
    await store.write(
        [(_INSERT, (session_id, f"do:{rid}", msgspec.json.encode(action), by, time.time()), False)],
        doing="store the request",
        sync=True,
    )
    return rid


async def requests_since(store: SessionStore, session_id: str, since: float) -> list[tuple[str, dict[str, Any]]]:
    """``(id, request with by)`` of the session's requests stored at or after ``since`` and not done yet,
    oldest first."""
    rows = await store.fetchall(
        "SELECT c.call_id, c.answer, c.by FROM control c WHERE c.session_id = ? AND c.call_id >= 'do:' "
        "AND c.call_id < 'do;' AND c.ts >= ? AND NOT EXISTS (SELECT 1 FROM control d WHERE d.session_id = "
        "c.session_id AND d.call_id = 'done:' || substr(c.call_id, 4)) ORDER BY c.ts, c.call_id",
        (session_id, since),
        doing="read the requests",
    )
    return [(row[0][3:], {**msgspec.json.decode(bytes(row[1])), "by": row[2]}) for row in rows]


async def finish(store: SessionStore, session_id: str, rid: str, ok: bool, message: str) -> None:
    """Store what came of request ``rid`` (the first word stays)."""
    await store.write(
        [
            (
                _INSERT,
                (session_id, f"done:{rid}", msgspec.json.encode({"ok": ok, "message": message}), "here", time.time()),
                False,
            )
        ],
        doing="store what the request did",
    )


async def outcome(
    store: SessionStore, session_id: str, rid: str
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Request ``rid`` as stored (with ``by`` and ``ts``) and what came of it (``ok``, ``message``), each None
    when absent."""
    rows = await store.fetchall(
        "SELECT call_id, answer, by, ts FROM control WHERE session_id = ? AND call_id IN (?, ?)",
        (session_id, f"do:{rid}", f"done:{rid}"),
        doing="read the request",
    )
    asked = done = None
    for call_id, answer, by, ts in rows:
        if call_id.startswith("do:"):
            asked = {**msgspec.json.decode(bytes(answer)), "by": by, "ts": ts}
        else:
            done = msgspec.json.decode(bytes(answer))
    return asked, done
