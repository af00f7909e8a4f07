"""What the loop needs from a change guard (checkpoints + journal), without importing git.

Before a dangerous tool runs, the loop asks the guard to take a checkpoint of the paths
the tool will touch (``None``: the whole tree, for shell commands) and to write a pending
journal entry; after the tool, it asks the guard to complete the entry. A guard that
cannot take its checkpoint raises :class:`~monkey.checkpoints.errors.CheckpointError` (it
belongs to the checkpoints, re-exported here), and the change does not run.
The real guard is :class:`monkey.checkpoints.guard.CheckpointGuard`; its methods block
(git, disk, SQLite), so the loop calls them in a worker thread.
"""

from __future__ import annotations

from typing import Protocol

from monkey.checkpoints.errors import CheckpointError

__all__ = ["ChangeGuard", "PendingChange", "CheckpointError"]


class PendingChange(Protocol):
    """A checkpoint taken and a journal entry written ahead of one change."""

    @property
    def checkpoint_id(self) -> str:
        """The id people use to undo or restore (``monkey restore ID``)."""
        ...

    @property
    def paths(self) -> list[str]:
        """The workspace-relative paths covered (empty for a whole-tree snapshot)."""
        ...

    def not_undoable(self) -> list[str]:
        """After the change: ``"path: why"`` of what it changed that undo cannot revert."""
        ...


class ChangeGuard(Protocol):
    """Checkpoints and journal entries around every change."""

    def oversized(self, paths: list[str]) -> list[str]:
        """Warnings for paths too large to checkpoint without a person's approval."""
        ...

    def begin(self, *, tool: str, paths: list[str] | None, session_id: str, turn: int, call_id: str) -> PendingChange:
        """Checkpoint ``paths`` (None: the whole tree) and write a pending entry."""
        ...

    def watch_missing(self) -> str:
        """Why the write watch cannot run ("" when it can): a person's write during a command is then the command's."""
        ...

    def claim(self, pending: PendingChange, pid: int, *, children: bool = False) -> None:
        """A process the change's call started: what its tree writes is that change's (``children``: its
        descendants' only, while the change is open)."""
        ...

    def finish(self, pending: PendingChange, *, ok: bool, error: str = "") -> str:
        """Record what the change did; returns a warning for the user, or ``""``."""
        ...

    def carry_on(self, pending: PendingChange, *, turn: int) -> tuple[PendingChange, str]:
        """Finish a whole-tree change that goes on (a background process's) and begin its next one,
        counted to ``turn``, where it ended (no write falls between the two); the next one and a
        warning as :meth:`finish` gives (raises CheckpointError when the next cannot begin)."""
        ...

    def line_counts(self, pending: PendingChange) -> tuple[int, int, int]:
        """After :meth:`finish`: ``(lines added, lines removed, files changed)`` by the change."""
        ...
