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

_TREE = ("WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id) ")


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
    rows = await store.fetchall(
        _TREE + "SELECT type, data, n FROM events WHERE session_id IN tree AND type IN ('message_completed', 'usage')",
        (session_id,), doing=doing)
    turns, tokens_in, tokens_out, cost = 0, 0, 0, 0.0
    for kind, data, n in rows:
        if kind == "message_completed":
            turns += n
            continue
        for line in bytes(data).split(b"\n") if n > 1 else [bytes(data)]:
            try:
                usage = json.loads(line)
            except ValueError:
                continue  # a damaged row: the chain check says so when the session loads
            tokens_in += _number(usage.get("input_tokens"))
            tokens_out += _number(usage.get("output_tokens"))
            cost += float(_number(usage.get("cost_usd"), float))
    marks = await store.fetchall("SELECT type, ts FROM events WHERE session_id = ? ORDER BY seq", (session_id,),
                                 doing=doing)
    return Spent(turns=turns, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost,
                 wall=_turn_seconds(marks))


def _number(value: object, kind: type = int) -> int | float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else kind(0)


def _turn_seconds(marks: list[tuple[str, float]]) -> float:
    """The seconds of every turn among ``(type, ts)`` rows, in order.

    A turn ends at its ``turn_completed`` or ``session_ended``; one cut off (the next turn or
    the next run's ``session_started`` comes first) at the last event before that."""
    total = 0.0
    began: float | None = None
    last = 0.0
    for kind, ts in marks:
        if began is not None:
            if kind in ("turn_completed", "session_ended"):
                total += max(0.0, ts - began)
                began = None
            elif kind in ("turn_started", "session_started"):
                total += max(0.0, last - began)
                began = None
        if kind == "turn_started":
            began = ts
        last = ts
    if began is not None:
        total += max(0.0, last - began)
    return total
