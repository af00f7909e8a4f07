"""Forking a stored session: a new session with the conversation up to a turn.

The new session's events are the original's own events up to the end of that turn (its
sub-agents' sessions and its ``usage`` events are not copied: what was spent stays the
original's), written by a :class:`~monkey.store.recorder.Recorder` under the new id, so
they are numbered, hash-chained and indexed for search like any session's. Its conversation
is what the model was sent at that point: for a fork of the whole session, exactly the
original's stored conversation (``/clear`` and compaction included); for ``--at TURN``, the
conversation the events give up to the end of that turn (a ``/clear`` before it included: nothing
from before that clear; one after it left out). Nothing is copied from the checkpoint journal:
the fork's undo covers only the changes made in the fork, and files are left as they are.
"""

from __future__ import annotations

import msgspec

from monkey import events as ev
from monkey.ids import new_id
from monkey.store.recorder import Recorder
from monkey.store.store import SessionInfo, SessionStore, StoreError

__all__ = ["fork_session", "FORK_LINK"]

FORK_LINK = "fork"
"""The ``session_links`` kind that names the session a fork came from (``detail`` is the turn)."""


async def fork_session(store: SessionStore, ref: str, *, at_turn: int | None = None) -> tuple[SessionInfo, SessionInfo]:
    """Fork session ``ref`` (an id or unique prefix) after turn ``at_turn`` (default: all of it);
    returns ``(original, fork)``. :class:`StoreError` when there is no such session or turn."""
    original = await store.find(ref)
    if at_turn is not None and not 0 < at_turn <= original.turns:
        raise StoreError(
            f"session {original.id} has turns 1 to {original.turns}; there is no turn {at_turn}"
            if original.turns
            else f"session {original.id} has no turn yet"
        )
    restored = await store.load(original.id) if at_turn is None else None
    fork_id = new_id()
    recorder = Recorder(store, fork_id, source=(lambda: restored.messages) if restored is not None else None)
    replace = msgspec.structs.replace
    ended = False
    for raw in await store.event_lines(original.id):
        try:
            event = ev.decode(raw)
        except ev.DecodeError:
            continue
        if isinstance(event, ev.TurnStarted) and at_turn is not None and event.turn > at_turn:
            break
        if isinstance(event, (ev.Usage, ev.TextDelta, ev.ThinkingDelta)) or (
            event.session_id and event.session_id != original.id
        ):
            continue  # spending stays the original's; deltas are in their message_completed
        if isinstance(event, ev.ConversationCleared) and ended:
            continue  # a /clear after turn TURN began what came next: the fork has the conversation of then
        ended = ended or (isinstance(event, ev.TurnCompleted) and at_turn is not None and event.turn >= at_turn)
        recorder.add(replace(event, session_id=fork_id))
    if not recorder.events:
        raise StoreError(f"session {original.id} has no events to fork")
    recorder.reconcile()
    await recorder.flush()
    title = f"{original.title} (fork)" if original.title else "(fork)"
    await store.write(
        [
            (
                "UPDATE sessions SET title = ?, status = 'forked', pid = 0, turns = ? WHERE id = ?",
                (title, at_turn if at_turn is not None else original.turns, fork_id),
                False,
            ),
            (
                "INSERT INTO session_links (session_id, kind, foreign_id, detail) VALUES (?, ?, ?, ?)",
                (fork_id, FORK_LINK, original.id, str(at_turn or original.turns)),
                False,
            ),
        ],
        doing="fork the session",
    )
    fork = await store.get(fork_id)
    if fork is None:  # its events lack the session_started that makes the row
        await store.delete(fork_id)
        raise StoreError(f"session {original.id} has no session_started event; it cannot be forked")
    return original, fork
