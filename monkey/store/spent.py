"""What a stored session has spent, for a budget that counts the whole session across resumes.

:func:`session_spent` reads it from the events the session and its sub-agents' sessions (rows
with ``parent`` set, at any depth) stored: model responses (``message_completed``, what a
budget counts as a turn), input and output tokens and dollars (``usage``), and the seconds
the session's own turns took (``turn_started`` to ``turn_completed``; a turn that never ended,
because monkey was killed, up to its last stored event). Sub-agents' seconds are not added:
they ran inside their parent's turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monkey.store.store import SessionStore

__all__ = ["Spent", "session_spent"]

_TREE = (
    "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id) "
    "SELECT id FROM tree"
)
_MARKS = ("turn_started", "turn_completed", "session_started", "session_ended")
"""The events that start and end turns and runs."""


@dataclass(frozen=True)
class Spent:
    """What a session spent (the fields of :meth:`monkey.agent.budget.Budget.restart`)."""

    turns: int = 0
    """Model responses."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall: float = 0.0
    """Seconds of the session's turns."""


async def session_spent(store: SessionStore, session_id: str) -> Spent:
    """What ``session_id`` and its sub-agents' sessions spent, as stored; raises :class:`StoreError`."""
    doing = "read what the session spent"
    turns, tokens_in, tokens_out, cost = 0, 0, 0, 0.0
    for (sid,) in await store.fetchall(_TREE, (session_id,), doing=doing):
        counted = await store.fetchall(
            "SELECT SUM(n) FROM events WHERE session_id = ? AND type = 'message_completed'", (sid,), doing=doing
        )
        turns += counted[0][0] or 0
        rows = await store.fetchall(
            "SELECT data, n FROM events WHERE session_id = ? AND type = 'usage'", (sid,), doing=doing
        )
        for data, n in rows:
            for line in bytes(data).split(b"\n") if n > 1 else [bytes(data)]:
                try:
                    usage = json.loads(line)
                except ValueError:
                    continue  # a damaged row: the chain check says so when the session loads
                tokens_in += int(_number(usage.get("input_tokens")))
                tokens_out += int(_number(usage.get("output_tokens")))
                cost += _number(usage.get("cost_usd"))
    return Spent(
        turns=turns,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        wall=await _turn_seconds(store, session_id),
    )


def _number(value: object) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


async def _turn_seconds(store: SessionStore, session_id: str) -> float:
    """The seconds of the session's turns, each from ``turn_started`` to its ``turn_completed`` (or
    ``session_ended``); one cut off (monkey was killed: the next turn or the next run's
    ``session_started`` comes first, or nothing) up to its last stored event."""
    marks = ", ".join("?" * len(_MARKS))
    rows = await store.fetchall(
        f"SELECT seq, type, ts FROM events WHERE session_id = ? AND type IN ({marks}) ORDER BY seq",
        (session_id, *_MARKS),
        doing="read what the session spent",
    )
    total = 0.0
    began: tuple[int, float] | None = None
    for seq, kind, ts in [*rows, (None, "", 0.0)]:  # the end of the rows cuts off a turn still open
        if began is not None and kind in ("turn_completed", "session_ended"):
            total += max(0.0, ts - began[1])
            began = None
        elif began is not None and kind in ("turn_started", "session_started", ""):
            total += max(0.0, await _last_before(store, session_id, began[0], seq) - began[1])
            began = None
        if kind == "turn_started":
            began = (seq, ts)
    return total


async def _last_before(store: SessionStore, session_id: str, after: int, before: int | None) -> float:
    """The time of the last event between ``after`` and ``before`` (the end: None), ``after``'s included."""
    rows = await store.fetchall(
        "SELECT MAX(ts) FROM events WHERE session_id = ? AND seq >= ? AND seq < ?",
        (session_id, after, before if before is not None else 2**62),
        doing="read what the session spent",
    )
    return rows[0][0] or 0.0
