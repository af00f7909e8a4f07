"""Answers to approvals given outside the process that asks (``monkey web``), through the store.

The process that runs a session asks its person (the app's dialog, the terminal's prompt) and
also watches the ``control`` table for an answer to the same call; the first answer stored
wins (the table's key is the asking session and the call: ``INSERT OR IGNORE``), so a browser and
a terminal answering at once agree on one, and each side can say who answered. Stored before it
acts, an answer survives either side being killed.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import msgspec

from monkey.store.store import SessionStore

__all__ = ["answer_for", "claim", "claim_now"]

_INSERT = "INSERT OR IGNORE INTO control (session_id, call_id, answer, by, ts) VALUES (?, ?, ?, ?, ?)"
_SELECT = "SELECT answer, by FROM control WHERE session_id = ? AND call_id = ?"


async def claim(store: SessionStore, session_id: str, call_id: str, answer: dict[str, Any], by: str) -> dict[str, Any]:
    """Store ``answer`` to ``call_id`` of session ``session_id`` unless one is there;
    the answer that holds (``answer`` with ``by``, or the one stored first)."""
    await store.write([(_INSERT, (session_id, call_id, msgspec.json.encode(answer), by, time.time()), False)],
                      doing="store the answer", sync=True)
    held = await answer_for(store, session_id, call_id)
    assert held is not None
    return held


async def answer_for(store: SessionStore, session_id: str, call_id: str) -> dict[str, Any] | None:
    """The answer stored for the call (with ``by``: who gave it), or None."""
    rows = await store.fetchall(_SELECT, (session_id, call_id), doing="read the answers")
    if not rows:
        return None
    return {**msgspec.json.decode(bytes(rows[0][0])), "by": rows[0][1]}


def claim_now(conn: sqlite3.Connection, session_id: str, call_id: str, answer: dict[str, Any],
              by: str) -> dict[str, Any]:
    """:func:`claim` on a plain connection, at once: for the process whose person just answered, so
    nothing else of it runs between the answer and its use (one short transaction, as the
    checkpoint journal writes). Raises :class:`sqlite3.Error`."""
    with conn:
        conn.execute(_INSERT, (session_id, call_id, msgspec.json.encode(answer), by, time.time()))
    row = conn.execute(_SELECT, (session_id, call_id)).fetchone()
    return {**msgspec.json.decode(bytes(row[0])), "by": row[1]}
