"""``/undo`` and ``/checkpoints``: the shadow-git checkpoints as slash commands (part of
:mod:`monkey.session.commands`, which registers them and re-exports :func:`describe_undo`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from monkey.session.host import BUSY, Host
from monkey.session.replies import CheckpointDiff, CheckpointList, Note, Reply

if TYPE_CHECKING:
    from monkey.events import Event

__all__ = ["undo_command", "checkpoints_command", "describe_undo"]


def _checkpoints_api(host: Host, emit: Callable[[Event], None] | None = None):
    from monkey.checkpoints.api import Checkpoints
    from monkey.config import monkey_home

    return Checkpoints(host.agent.workspace, home=monkey_home(), emit=emit)


def describe_undo(
    removed: list[str],
    restored: list[str],
    paths: list[str],
    overwritten: list[str] = (),  # type: ignore[assignment]
    changes: int = 1,
) -> str:
    """One line for what an undo (of ``changes`` checkpoints) did; caches are counted, not listed."""
    from monkey.checkpoints.api import is_cache

    caches = [p for p in paths if is_cache(p)]
    what = [
        *(f"removed {p}" for p in removed if p not in caches),
        *(f"restored {p}" for p in restored if p not in caches),
    ]
    what += [f"reverted {p}" for p in paths if p not in removed and p not in restored and p not in caches]
    if caches:
        what.append(f"{len(caches)} cache file{'' if len(caches) == 1 else 's'} put back as they were")
    line = f"undone: {', '.join(what) or 'a change that touched no file'}"
    if changes > 1:
        line += f" ({changes} changes: the latest ones touched only caches or nothing)"
    if overwritten:
        line += f" (overwrote {', '.join(overwritten)})"
    return line


async def undo_command(host: Host, rest: str) -> list[Reply]:
    from monkey.checkpoints.undo import UndoError

    if rest not in ("", "--force", "-f"):
        return [Note("usage: /undo, or /undo --force to overwrite what changed since", "warning")]
    if host.working:
        return [Note(BUSY, "warning")]
    agent = host.agent
    made: list[Event] = []
    try:
        outcome = await asyncio.to_thread(
            lambda: _checkpoints_api(host, made.append).undo(
                steps=1, session_id=agent.session_id, force=bool(rest), recognisable=True
            )
        )
    except UndoError as exc:
        return [Note(str(exc), "warning")]
    except Exception as exc:  # noqa: BLE001 - a git or database failure is shown, not fatal
        return [Note(f"undo failed: {exc}", "error")]
    for event in made:
        await host.emit(event)
    notes: list[Reply] = [
        Note(
            describe_undo(
                outcome.removed, outcome.restored, outcome.paths, outcome.overwritten, len(outcome.checkpoint_ids)
            )
        )
    ]
    return notes + [
        Note(f"left as it is, not attributable to monkey: {line}", "warning") for line in outcome.left_alone
    ]


async def checkpoints_command(host: Host, rest: str) -> list[Reply]:
    words = rest.split()
    api = _checkpoints_api(host)
    try:
        infos = await asyncio.to_thread(api.list, host.agent.session_id)
    except Exception as exc:  # noqa: BLE001 - a damaged journal or shadow repository
        return [Note(f"cannot list the checkpoints: {exc}", "error")]
    if words[:1] == ["show"] and len(words) == 2:
        ident = words[1]
        if ident.isdigit() and 0 < int(ident) <= len(infos):
            ident = infos[int(ident) - 1].id
        try:
            return [CheckpointDiff(await asyncio.to_thread(api.show, ident))]
        except Exception as exc:  # noqa: BLE001 - UndoError (no such checkpoint) or a git failure
            return [Note(str(exc), "warning")]
    if words:
        return [Note("usage: /checkpoints, or /checkpoints show N", "warning")]
    return [CheckpointList(infos, api)]
