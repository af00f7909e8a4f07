"""``/stats``: the current session's figures and today's, from the store (see :mod:`monkey.metrics`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from monkey.session.replies import Note, Reply

if TYPE_CHECKING:
    from monkey.store import SessionStore

__all__ = ["stats_command"]


async def stats_command(store: SessionStore | None, session_id: str, rest: str) -> list[Reply]:
    """Session ``session_id`` (with its sub-agents) and today in every workspace: one line each."""
    from monkey.metrics.query import Scope, compute
    from monkey.metrics.since import parse_since
    from monkey.metrics.text import brief, plural
    from monkey.store import StoreError

    if rest.strip():
        return [Note("usage: /stats (monkey stats in a shell shows more)", "warning")]
    if store is None:
        return [Note("the session store is not open: no figures", "warning")]
    try:
        session = (await compute(store, Scope(session=session_id))).totals
        today = (await compute(store, Scope(since=parse_since("today", now=time.time())))).totals
    except StoreError as exc:
        return [Note(f"cannot read the figures: {exc}", "error")]
    mine = f"this session: {brief(session)}" if session.sessions else "this session: nothing stored yet"
    return [Note(f"{mine}\ntoday, {plural(today.sessions, 'session')} in every workspace: {brief(today)}")]
