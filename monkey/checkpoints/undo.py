"""Undo: put back exactly what monkey changed, all or nothing.

For every path the entries being undone touched (except paths whose change monkey cannot
attribute to its own call: those are left alone, and the undo says why), the target is its state before the
earliest of them and the expected current state is its state after the latest. A path
whose current state is not the expected one was changed by someone else since: the undo
refuses (with a diff) unless forced. Files monkey never touched are never read or
written. The undo is journalled like a change (kind ``undo``), and if one write fails,
the files already written are put back, so nothing is left half-done.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from monkey.checkpoints.fsops import FileState, PathError, read_state, remove_empty_tree, same, write_state
from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.journal import Entry, FileRecord
from monkey.checkpoints.shadow import ShadowRepo
from monkey.db import no_space
from monkey.ids import new_id
from monkey.tools.fileio import looks_binary, unified_diff

__all__ = [
    "Conflict",
    "UndoConflict",
    "UndoError",
    "UndoOutcome",
    "plan_undo",
    "apply_undo",
    "content_diff",
    "FAULT_KILL_AFTER",
]

FAULT_KILL_AFTER = "MONKEY_FAULT_KILL_UNDO_AFTER"
"""Fault injection for tests: an undo kills its own process (SIGKILL) after writing this many files,
with the next file's temporary copy already written, as a kill at that moment would leave it."""


class UndoError(Exception):
    """An undo could not be made; nothing was changed."""


@dataclass
class Conflict:
    """A path changed by someone else since monkey's change."""

    path: str
    reason: str
    diff: str = ""
    """From the content monkey left to the content there now."""


class UndoConflict(UndoError):
    """Some paths were changed by someone else since; ``--force`` overrides."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        names = ", ".join(c.path for c in conflicts)
        super().__init__(f"changed since monkey's change, so the undo was refused: {names} (--force overrides)")
        self.conflicts = conflicts


@dataclass
class _Plan:
    path: str
    target_sha: str | None
    target_mode: int
    target_exact: bool
    created_dirs: list[str]
    expected_sha: str | None = None
    expected_mode: int = 0
    expected_exact: bool = True
    current: FileState | None = None


@dataclass
class UndoOutcome:
    """What an undo did."""

    undo_id: str
    checkpoint_ids: list[str]
    paths: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Files monkey had created, now gone again."""
    restored: list[str] = field(default_factory=list)
    """Files monkey had deleted, now back."""
    forced: bool = False
    overwritten: list[str] = field(default_factory=list)
    """Paths changed by someone else that --force overwrote."""
    left_alone: list[str] = field(default_factory=list)
    """``"path: why"`` of changes monkey cannot be sure were its own, so did not revert."""
    completed_interrupted: bool = False
    """This was an undo a killed monkey had left half-done, now completed (and nothing more)."""


def content_diff(shadow: ShadowRepo, path: str, old: bytes | None, new: bytes | None) -> str:
    """A unified diff of two contents of a path (a one-line note for binary files)."""
    a, b = old or b"", new or b""
    if a == b:
        return "" if (old is None) == (new is None) else f"{path}: {'created' if old is None else 'deleted'} (empty)\n"
    if looks_binary(a) or looks_binary(b):
        return f"Binary files a/{path} and b/{path} differ\n"
    return unified_diff(path, a.decode("utf-8", "surrogateescape"), b.decode("utf-8", "surrogateescape"))


def plan_undo(
    guard: CheckpointGuard, entries: list[Entry], *, force: bool
) -> tuple[list[_Plan], list[Conflict], dict[str, str]]:
    """The per-path plan for undoing ``entries`` (oldest first), the conflicts found, and the
    paths left alone because monkey cannot be sure their change was its own (path -> why)."""
    plans: dict[str, _Plan] = {}
    left: dict[str, str] = {}
    folders: list[str] = []
    for entry in entries:
        for rec in entry.files:
            if rec.path.endswith("/"):  # an empty folder the change created
                if rec.unattributed:
                    left[rec.path] = rec.unattributed
                elif rec.path not in folders:
                    folders.append(rec.path)
                continue
            if rec.unattributed:
                seen = plans.get(rec.path)
                if seen is not None and seen.expected_sha == rec.after_sha:
                    continue  # the same change, recorded by the monkey call that made it
                plans.pop(rec.path, None)  # never reverted, and nothing before it either
                left[rec.path] = rec.unattributed
                continue
            plan = plans.get(rec.path)
            if plan is None:
                plan = plans[rec.path] = _Plan(
                    rec.path, rec.before_sha, rec.before_mode, rec.exact_mode, list(rec.created_dirs)
                )
            plan.expected_sha, plan.expected_mode, plan.expected_exact = rec.after_sha, rec.after_mode, rec.exact_mode
    left = {path: why for path, why in left.items() if path not in plans and path not in folders}
    conflicts: list[Conflict] = []
    for plan in plans.values():
        try:
            plan.current = read_state(guard.workspace, plan.path)
        except PathError as exc:
            conflicts.append(Conflict(plan.path, str(exc)))
            continue
        if same(plan.current, plan.expected_sha, plan.expected_mode, plan.expected_exact):
            continue
        expected = guard.shadow.read_blob(plan.expected_sha) if plan.expected_sha else None
        now = plan.current.data if plan.current is not None else None
        if plan.current is not None and plan.expected_sha == plan.current.sha:
            reason = "its mode was changed"
        elif plan.current is None:
            reason = "it was deleted"
        elif plan.expected_sha is None:
            reason = "it was created again"
        else:
            reason = "its content was changed"
        conflicts.append(
            Conflict(
                plan.path,
                f"{plan.path}: {reason} after monkey's change",
                content_diff(guard.shadow, plan.path, expected, now),
            )
        )
    if conflicts and not force:
        raise UndoConflict(conflicts)
    hard = [c for c in conflicts if not c.diff and "after monkey's change" not in c.reason]
    if hard:  # unreadable or unsafe paths cannot be forced
        raise UndoError("; ".join(c.reason for c in hard))
    return [*plans.values(), *(_Plan(f, None, 0, False, [f.rstrip("/")]) for f in folders)], conflicts, left


def apply_undo(
    guard: CheckpointGuard, entries: list[Entry], *, force: bool = False, session_id: str = ""
) -> UndoOutcome:
    """Undo ``entries`` (oldest first) all together; raises UndoConflict/UndoError.

    Paths whose change monkey cannot attribute to itself are left as they are and listed
    in the outcome's ``left_alone`` with the reason.
    """
    if not entries:
        raise UndoError("nothing to undo")
    shadow = guard.shadow
    shadow.ensure()
    with shadow.locked():
        plans, conflicts, left = plan_undo(guard, entries, force=force)
        targets: dict[str, FileState | None] = {}
        folders = [p for p in plans if p.path.endswith("/")]
        plans = [p for p in plans if not p.path.endswith("/")]
        for plan in plans:  # read every target before touching anything
            targets[plan.path] = (
                None if plan.target_sha is None else FileState(plan.target_mode, shadow.read_blob(plan.target_sha))
            )
        undo = Entry(
            id=new_id("u"),
            workspace=guard.key,
            kind="undo",
            state="pending",
            tool="undo",
            session_id=session_id,
            owner=guard._own(),
        )
        for plan in plans:
            cur = plan.current
            undo.files.append(
                FileRecord(
                    plan.path,
                    shadow.store_blob(cur.data) if cur is not None else None,
                    cur.mode if cur is not None else 0,
                    plan.target_sha,
                    plan.target_mode,
                    created_dirs=plan.created_dirs,
                    exact_mode=plan.target_exact,
                )
            )
        undo.files += [
            FileRecord(f.path, None, 0, None, 0, created_dirs=f.created_dirs, exact_mode=False) for f in folders
        ]
        guard.journal.add(undo, claim=[e.id for e in entries])
        done: list[_Plan] = []
        kill_after = _fault_point()
        try:
            for plan in plans:
                if len(done) == kill_after:
                    write_state(
                        guard.workspace,
                        plan.path,
                        targets[plan.path],
                        exact_mode=plan.target_exact,
                        created_dirs=plan.created_dirs,
                        die_before_rename=True,
                    )
                write_state(
                    guard.workspace,
                    plan.path,
                    targets[plan.path],
                    exact_mode=plan.target_exact,
                    created_dirs=plan.created_dirs,
                )
                done.append(plan)
        except (OSError, PathError) as exc:
            failed_at = plan.path
            for back in reversed(done):
                try:
                    write_state(guard.workspace, back.path, back.current)
                except (OSError, PathError):
                    pass
            why = no_space(guard.workspace) if isinstance(exc, OSError) and exc.errno == errno.ENOSPC else str(exc)
            undo.state, undo.note = "failed", f"{failed_at}: {why}"
            guard.journal.finish_undo(undo)
            raise UndoError(f"undo failed at {failed_at} ({why}); every file was put back as it was") from None
        gone = [f.path for f in folders if remove_empty_tree(guard.workspace, f.path)]
        undo.state = "applied"
        notes = ["forced over: " + ", ".join(c.path for c in conflicts)] if conflicts else []
        notes += [f"left alone, not attributable to monkey: {p} ({why})" for p, why in left.items()]
        undo.note = "; ".join(notes)
        guard.journal.finish_undo(undo)
    return UndoOutcome(
        undo_id=undo.id,
        checkpoint_ids=[e.id for e in entries],
        paths=[p.path for p in plans] + gone,
        removed=[p.path for p in plans if p.target_sha is None and p.current is not None] + gone,
        restored=[p.path for p in plans if p.target_sha is not None and p.current is None],
        forced=bool(conflicts),
        overwritten=[c.path for c in conflicts],
        left_alone=[f"{p}: {why}" for p, why in left.items()],
    )


def _fault_point() -> int:
    """The number of files after which a test wants this undo killed (-1: never)."""
    raw = os.environ.get(FAULT_KILL_AFTER, "")
    return int(raw) if raw.isdigit() else -1
