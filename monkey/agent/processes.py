"""What background processes change in the workspace, checkpointed like any command's change.

``shell_execute`` with ``background`` is checkpointed by the call pipeline like a foreground
command (a whole-tree snapshot, the process handed to the checkpoint as it is spawned), but its
change cannot be finished when the call returns: the process goes on writing. The pipeline leaves
it open on the process (:attr:`~monkey.tools.processes.BackgroundProcess.change`), and at each
turn's end :func:`settle` finishes it (what changed since, attributed by the write watch where it
runs: the process's own writes are its change, another command's or a person's are not; a
snapshot at the turn's end otherwise) and, for a process still running, opens the next one, for
the next turn. Each is a journal entry of its own: undone like any command's. When the session
ends, the processes are stopped (but the ones the person keeps) and their last changes finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from monkey.agent.changes import ChangeGuard, CheckpointError, PendingChange
from monkey.events import CheckpointCreated, Error, Event, NotUndoable
from monkey.tools.processes import ProcessTable

__all__ = ["end", "settle"]

Emit = Callable[[Event], None]


async def settle(
    table: ProcessTable | None,
    guard: ChangeGuard | None,
    session_id: str,
    turn: int,
    emit: Emit,
    *,
    reopen: bool = True,
) -> None:
    """Finish the open change of every background process (what it changed up to now) and, with
    ``reopen``, open the next one of each process still running, counted to the next turn."""
    if table is None or guard is None:
        return
    for entry in table.all():
        pending: PendingChange | None = entry.change
        running = reopen and entry.state == "running"
        if pending is not None and not running:
            entry.change = None
            await _finish(guard, pending, session_id, emit)
        if not running:
            continue
        entry.change = None
        try:
            if pending is not None:  # the next change begins where this one ends: no write falls between
                fresh, warning = await asyncio.to_thread(guard.carry_on, pending, turn=turn + 1)
                _said(pending, warning, session_id, emit)
            else:
                fresh = await asyncio.to_thread(
                    guard.begin,
                    tool="shell_execute",
                    paths=None,
                    session_id=session_id,
                    turn=turn + 1,
                    call_id=entry.call_id,
                )
        except CheckpointError as exc:
            if pending is not None:  # finished (what it changed is recorded); the next could not begin
                _said(pending, "", session_id, emit)
            emit(
                Error(
                    session_id=session_id,
                    kind="checkpoint",
                    message=f"background process {entry.id}: {exc}; what it changes next is not undoable",
                )
            )
            continue
        guard.claim(fresh, entry.pid)
        entry.change = fresh
        emit(
            CheckpointCreated(
                session_id=session_id,
                checkpoint_id=fresh.checkpoint_id,
                tool="shell_execute",
                paths=[],
                turn=turn + 1,
                call_id=entry.call_id,
            )
        )


async def _finish(guard: ChangeGuard, pending: PendingChange, session_id: str, emit: Emit) -> None:
    _said(pending, await asyncio.to_thread(guard.finish, pending, ok=True), session_id, emit)


def _said(pending: PendingChange, warning: str, session_id: str, emit: Emit) -> None:
    """What a finished change of a background process's could not undo, and its guard's warning."""
    if items := pending.not_undoable():
        emit(
            NotUndoable(
                session_id=session_id,
                checkpoint_id=pending.checkpoint_id,
                tool="shell_execute",
                call_id=getattr(pending, "call_id", ""),
                items=items,
            )
        )
    if warning:
        emit(Error(session_id=session_id, message=warning, kind="checkpoint"))


async def end(
    table: ProcessTable, guard: ChangeGuard | None, session_id: str, turn: int, *, everything: bool = False
) -> list[Event]:
    """The session ends: stop its background processes (``everything``: the ones the person keeps too)
    and finish their changes; the events that says, for the driver to store and show."""
    said: list[Event] = []
    stopped = await table.stop_all(kept=everything)
    await settle(table, guard, session_id, turn, said.append, reopen=False)
    table.forget(stopped)
    return said
