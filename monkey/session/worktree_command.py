"""``/worktree [NAME]``: go on in a new session in a new git worktree of this repository.

The worktree is made as ``monkey agent --worktree NAME`` makes it (:mod:`monkey.worktrees`);
the front end then ends this session (it stays stored in this workspace) and opens a new one
in the worktree (:class:`~monkey.session.replies.MoveToWorktree`), as if the person had quit and
run ``monkey agent --worktree NAME``.
"""

from __future__ import annotations

import asyncio

from monkey.session.host import BUSY, Host
from monkey.session.replies import MoveToWorktree, Note, Reply

__all__ = ["worktree"]


async def worktree(host: Host, rest: str) -> list[Reply]:
    from monkey.worktrees import WorktreeError, create, same_folder

    words = rest.split()
    if len(words) > 1:
        return [Note("usage: /worktree [NAME] (monkey worktrees list shows the worktrees)", "warning")]
    if host.working:
        return [Note(BUSY, "warning")]
    agent = host.agent
    try:
        made, notes = await asyncio.to_thread(create, agent.workspace, words[0] if words else None)
    except WorktreeError as exc:
        return [Note(str(exc), "warning")]
    lines = [
        f"worktree {made.name}: {made.path} on the new branch {made.branch} (from {made.head[:7]})",
        *notes,
        "a new session starts there (the conversation does not move: the worktree has HEAD's files)",
    ]
    if agent.started:
        lines.append(
            f"this session stays stored in {agent.workspace}: monkey agent --resume {agent.session_id} "
            "there goes on with it"
        )
    return [Note("\n".join(lines)), MoveToWorktree(str(same_folder(made, agent.workspace)), made.name)]
