"""A sub-agent in a git worktree of its own (``isolation: worktree`` in its definition).

The child works in ``<repo>/.monkey/worktrees/AGENT-ID`` on a new branch ``monkey/AGENT-ID``
made from the repository's ``HEAD`` (see :mod:`monkey.worktrees`), with a checkpoint guard of
that worktree (its changes are undoable there). While it runs, the parent's process holds the
worktree (``monkey worktrees rm`` refuses). When it ends, a worktree it left as it found it
(no change, no commit) is removed with its branch; otherwise both stay, and the handoff tells
the parent's model where, for the person to review and merge.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monkey.tools.base import ToolError
from monkey.worktrees import Hold, Worktree, WorktreeError, changes, create, delete_branch, hold, remove, same_folder

__all__ = ["Isolated", "isolate", "release"]


@dataclass
class Isolated:
    """A child's worktree while it runs."""

    worktree: Worktree
    workspace: Path
    """Where the child works: the worktree's folder the parent's workspace is in its own checkout."""
    home: Path
    guard: Any
    """The worktree's checkpoint guard (None when the parent has none)."""
    held: Hold | None


def _name(agent: str, session_id: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9]", "", session_id)[-8:]
    return f"{agent[:40]}-{tail}"


async def isolate(workspace: Path, agent: str, session_id: str, parent_guard: Any, home: Path) -> Isolated:
    """Make the worktree child ``session_id`` of agent ``agent`` works in, from the repository of ``workspace``.

    Raises:
        ToolError: no worktree can be made here (not a git repository, no commit ...): said to the model.
    """
    try:
        worktree, _ = await asyncio.to_thread(create, workspace, _name(agent, session_id))
    except WorktreeError as exc:
        raise ToolError(
            f"agent {agent} works in a git worktree of its own (isolation: worktree), and none can be made here: {exc}"
        ) from None
    where = same_folder(worktree, workspace)
    guard = None
    if parent_guard is not None:
        from monkey.checkpoints.guard import CheckpointGuard

        guard = CheckpointGuard(where, home=parent_guard.home, max_file_size=parent_guard.max_file_size)
    return Isolated(worktree=worktree, workspace=where, home=home, guard=guard, held=hold(worktree.path, home))


def _settle(isolated: Isolated) -> bool:
    """Remove the worktree (and its branch) when the child left no change nor commit; whether it stays."""
    worktree = isolated.worktree
    try:
        if changes(worktree.path):
            return True
        from monkey.worktrees import find

        now = find(worktree.path, worktree.name)
        if now.head != worktree.head:
            return True
        remove(worktree.path, worktree.name, home=isolated.home)
        delete_branch(worktree.path.parent, worktree.branch)
    except WorktreeError:
        return True  # when in doubt, nothing is removed
    return False


async def release(isolated: Isolated) -> bool:
    """The child ended: let go of its worktree, removing it when unchanged; whether it stays."""
    if isolated.held is not None:
        isolated.held.release()
        isolated.held = None
    return await asyncio.to_thread(_settle, isolated)
