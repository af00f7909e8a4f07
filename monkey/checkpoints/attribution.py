"""Which of the changes a whole-tree snapshot found were the command's own.

The difference between the snapshots before and after a shell command (or an external
agent's run) is everything that changed in the workspace meanwhile, whoever changed it.
:func:`attribute` keeps in the entry only what monkey can be sure its own call did:

- a change another monkey call recorded in the shared journal during the same window
  (another session's ``file_write``, say) is that call's: it is dropped from this entry
  when that call's record explains it exactly, and marked not attributable otherwise;
- where a :class:`~monkey.checkpoints.watch.Window` of the write watch covered the call, a path only
  another command of this monkey wrote (its processes claimed by its own window) is dropped, and
  a path some other program, monkey itself or a process monkey could not identify wrote is
  marked not attributable;
- without one, a path whose inode changed after the command had ended is marked, and so
  is everything when another shell command or external agent ran at the same time (in
  another monkey or in another session of this one; an external agent's own command is
  marked for its agent's run, which went on meanwhile, but the run holds what the command did);
- an entry repaired after monkey was killed during the command is judged by the time
  window up to the moment the command died (the guardian of :mod:`monkey.children` marks
  it; without one, monkey's last heartbeat); marked whole when that moment is unknown.

Undo leaves a path marked not attributable alone and says why (see ``undo.plan_undo``).
"""

from __future__ import annotations

import os
from pathlib import Path

from monkey.checkpoints.journal import Entry, FileRecord, Journal
from monkey.checkpoints.watch import Window

__all__ = ["attribute", "KILLED"]

KILLED = (
    "monkey was stopped while the command ran and its last moment is unknown, so what changed "
    "cannot be told apart from other programs' changes"
)


def attribute(
    journal: Journal, workspace: Path, entry: Entry, *, watch: Window | None, ended: float, killed: bool = False
) -> None:
    """Drop or mark the records of ``entry`` that monkey cannot be sure its own call made."""
    if killed:
        for rec in entry.files:
            rec.unattributed = KILLED
        return
    others = journal.overlapping(entry.workspace, entry.created_at, ended, exclude=entry.id)
    kept: list[FileRecord] = []
    for rec in entry.files:
        theirs = [(e, r) for e in others for r in e.files if r.path == rec.path and not r.unattributed]
        if theirs and all(_explains(r, rec) for _, r in theirs):
            continue  # exactly another call's change
        if theirs:
            e, _ = theirs[-1]
            rec.unattributed = (
                f"monkey session {e.session_id or '-'} changed it too ({e.tool}, "
                f"checkpoint {e.id}) while the command ran"
            )
        elif watch is not None:
            if watch.others_only(rec.path):
                continue  # another command's of this monkey, run at the same time: in its own entry
            rec.unattributed = watch.why_not_ours(workspace, rec.path)
        else:
            rec.unattributed = _after_the_end(workspace, rec, ended) or _concurrent(others, entry)
        kept.append(rec)
    entry.files = kept


def _explains(theirs: FileRecord, ours: FileRecord) -> bool:
    return theirs.before_sha == ours.before_sha and theirs.after_sha == ours.after_sha


def _after_the_end(workspace: Path, rec: FileRecord, ended: float) -> str:
    """A path (or, when gone, its folder) whose inode changed after the command had ended."""
    parts = rec.path.rstrip("/").split("/")
    for depth in range(len(parts), -1, -1):
        try:
            st = os.lstat(workspace.joinpath(*parts[:depth]))
        except OSError:
            continue
        if st.st_ctime > ended:
            what = "it" if depth == len(parts) else "its folder"
            return f"{what} changed after the command had ended (or monkey had stopped)"
        return ""
    return ""


def _concurrent(others: list[Entry], entry: Entry) -> str:
    """Without a write watch, a whole-tree change by another call at the same time (another
    monkey, or another session of this one) taints everything."""
    for other in others:
        whole_tree = not other.files or any(not r.exact_mode for r in other.files)
        if whole_tree and not _within_run(other, entry):
            if _within_run(entry, other):
                return (
                    f"the agent ({other.tool}) could write files itself while its command ran (checkpoint "
                    f"{other.id}) and this system cannot tell whose writes were whose"
                )
            who = "another monkey" if other.owner != entry.owner else "another session of this monkey"
            return (
                f"{who} ran {other.tool} at the same time (checkpoint {other.id}, session "
                f"{other.session_id or '-'}) and this system cannot tell whose writes were whose"
            )
    return ""


def _within_run(inner: Entry, outer: Entry) -> bool:
    """Whether ``inner`` is a call an external agent made during its run ``outer`` (whose call id is
    ``run…``: what the agent changed is the run's, its own command's included)."""
    return (
        outer.call_id.startswith("run")
        and inner.session_id == outer.session_id
        and inner.turn == outer.turn
        and inner.owner == outer.owner
        and inner.created_at >= outer.created_at
    )
