"""The checkpoint operations people use: list, show, undo, restore, gc.

:class:`Checkpoints` is the small API the CLI (``monkey undo``, ``monkey checkpoints``,
``monkey restore``) and the TUI (``/undo``, the timeline) call. Every undo emits an
:class:`~monkey.events.UndoApplied` event through the ``emit`` callback it was given.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from monkey.checkpoints.guard import DEFAULT_MAX_FILE_SIZE, CheckpointGuard, human_size
from monkey.checkpoints.journal import Entry, Journal
from monkey.checkpoints.undo import UndoError, UndoOutcome, apply_undo, content_diff
from monkey.events import Event, UndoApplied
from monkey.tools.fileio import looks_binary, printable

__all__ = [
    "Checkpoints",
    "CheckpointInfo",
    "GcResult",
    "UndoError",
    "parse_size",
    "undo_event",
    "is_cache",
    "CACHE_DIRS",
]

CACHE_DIRS = frozenset(
    "__pycache__ .pytest_cache .mypy_cache .ruff_cache .hypothesis .cache .tox .nox .coverage .parcel-cache .next"
    " .turbo".split()
)
"""Folders tools write as they run (a test run's caches): a change only there is nothing a person
would recognise as a change, so ``/undo`` passes over it to the latest one they would."""


def is_cache(path: str) -> bool:
    """Whether ``path`` is a cache a tool writes as it runs (see :data:`CACHE_DIRS`, and ``*.pyc``)."""
    parts = path.split("/")
    return (
        path.endswith((".pyc", ".pyo")) or any(part in CACHE_DIRS for part in parts[:-1]) or parts[-1] in (".coverage",)
    )


def _recognisable(entry: Entry) -> bool:
    """Whether an entry changed a file a person would recognise (not only caches, not nothing)."""
    return any(not is_cache(p) for p in entry.paths) or bool(entry.unrecorded)


_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2, "G": 1024**3, "GB": 1024**3}


def parse_size(text: str) -> int:
    """``"500M"``, ``"1.5GB"``, ``"1024"`` -> bytes (ValueError when not a size)."""
    raw = text.strip().upper().replace(" ", "").removesuffix("IB").removesuffix("I")
    number = raw.rstrip("KMGB")
    unit = raw[len(number) :]
    if unit not in _UNITS or not number:
        raise ValueError(f"not a size: {text!r} (examples: 500M, 2G, 100000)")
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (examples: 500M, 2G, 100000)") from None
    if value < 0:
        raise ValueError(f"a size cannot be negative: {text!r}")
    return int(value * _UNITS[unit])


@dataclass
class CheckpointInfo:
    """One checkpoint as listed."""

    id: str
    tool: str
    state: str
    session_id: str
    turn: int
    created_at: float
    paths: list[str]
    added: int = 0
    removed: int = 0
    binary: int = 0
    note: str = ""
    not_attributable: list[str] = field(default_factory=list)
    """Paths that changed during the call but that monkey cannot be sure it changed: undo leaves them."""
    not_undoable: list[str] = field(default_factory=list)
    """``"path: why"`` of changes the call made that monkey could not record (too large, nested repository)."""

    def as_dict(self) -> dict[str, object]:
        """The checkpoint as JSON-ready data."""
        return dict(self.__dict__)


@dataclass
class GcResult:
    """What ``checkpoints gc`` removed."""

    removed: list[str] = field(default_factory=list)
    size_before: int = 0
    size_after: int = 0


class Checkpoints:
    """The checkpoints of one workspace."""

    def __init__(
        self,
        workspace: Path,
        *,
        home: Path,
        emit: Callable[[Event], None] | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    ) -> None:
        self.guard = CheckpointGuard(workspace, home=home, max_file_size=max_file_size)
        self.emit = emit or (lambda event: None)
        self.notes: list[str] = []
        """What the repair run by the latest :meth:`undo` said (interrupted changes completed)."""

    @property
    def shadow_path(self) -> Path:
        """Where the shadow repository lives."""
        return self.guard.shadow.git_dir

    def size(self) -> int:
        """The shadow repository's size in bytes."""
        return self.guard.shadow.size() if self.guard.shadow.exists() else 0

    # -- listing ---------------------------------------------------------------------

    def entries(self, session_id: str | None = None) -> list[Entry]:
        """Journal entries of changes, oldest first."""
        return self.guard.journal.entries(self.guard.key, session_id=session_id)

    def resolve(self, ident: str) -> Entry:
        """A change entry by id, or a unique start or end of one (UndoError otherwise)."""
        ident = ident.strip()
        found = [e for e in self.guard.journal.find(self.guard.key, ident) if e.kind == "change"] if ident else []
        if not found:
            raise UndoError(f"no checkpoint {ident!r} in {self.guard.workspace} (see: monkey checkpoints)")
        exact = [e for e in found if e.id == ident]
        if exact:
            return exact[0]
        if len(found) > 1:
            raise UndoError(f"checkpoint id {ident!r} is ambiguous: {', '.join(e.id for e in found[:5])}")
        return found[0]

    def info(self, entry: Entry) -> CheckpointInfo:
        """Listing data of an entry, with line counts of its diff."""
        info = CheckpointInfo(
            entry.id,
            entry.tool,
            entry.state,
            entry.session_id,
            entry.turn,
            entry.created_at,
            [printable(p) for p in entry.paths],
            note=printable(entry.note),
            not_attributable=[printable(r.path) for r in entry.files if r.unattributed],
            not_undoable=[printable(f"{p}: {why}") for p, why in entry.unrecorded],
        )
        shadow = self.guard.shadow
        for rec in entry.files:
            if entry.state == "pending":
                break
            try:
                old = shadow.read_blob(rec.before_sha) if rec.before_sha else b""
                new = shadow.read_blob(rec.after_sha) if rec.after_sha else b""
            except Exception:
                continue
            if looks_binary(old) or looks_binary(new):
                info.binary += 1
                continue
            for line in content_diff(shadow, rec.path, old, new).splitlines():
                if line.startswith("+") and not line.startswith("+++"):
                    info.added += 1
                elif line.startswith("-") and not line.startswith("---"):
                    info.removed += 1
        return info

    def list(self, session_id: str | None = None) -> list[CheckpointInfo]:
        """Every checkpoint of the workspace (or of one session), oldest first."""
        return [self.info(e) for e in self.entries(session_id)]

    def show(self, ident: str) -> str:
        """The diff a checkpoint's change made."""
        entry = self.resolve(ident)
        shadow = self.guard.shadow
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.created_at))
        out = [
            f"checkpoint {entry.id}  {entry.tool}  {entry.state}  {when}",
            f"session {entry.session_id or '-'}  turn {entry.turn}",
        ]
        if entry.note:
            out.append(f"note: {entry.note}")
        out.append("")
        if entry.state == "pending":
            out.append("(the change has not completed; monkey repairs it at the next start)")
        for path, why in entry.unrecorded:
            out.append(f"cannot be undone: {path}: {why}")
        for rec in entry.files:
            if rec.unattributed:
                out.append(f"not attributable to monkey (undo leaves it): {rec.path}: {rec.unattributed}")
        if entry.unrecorded or any(r.unattributed for r in entry.files):
            out.append("")
        for rec in entry.files:
            old = shadow.read_blob(rec.before_sha) if rec.before_sha else None
            new = shadow.read_blob(rec.after_sha) if rec.after_sha else None
            if rec.before_mode and rec.after_mode and rec.before_mode != rec.after_mode:
                out.append(f"mode {rec.path}: {rec.before_mode:o} -> {rec.after_mode:o}")
            out.append(content_diff(shadow, rec.path, old, new).rstrip("\n"))
        return printable("\n".join(out).rstrip("\n") + "\n")

    # -- undo and restore ------------------------------------------------------------

    def undo(
        self,
        *,
        steps: int | None = None,
        session_id: str | None = None,
        to: str | None = None,
        force: bool = False,
        recognisable: bool = False,
    ) -> UndoOutcome:
        """Undo the latest change (or ``steps`` of them, a session's, or all from ``to`` on).

        With ``recognisable`` one step goes back to the latest change a person would recognise:
        the later ones that touched only caches (a test run's ``__pycache__``) or nothing are undone
        with it (their outcome's ``checkpoint_ids`` name them all).

        An undo that a killed monkey left half-done is completed first, and then that is all
        this call does: its outcome says ``completed_interrupted`` and nothing older is undone.
        """
        guard = self.guard
        already = len(guard.completed_undos)
        self.notes = guard.repair()
        if len(guard.completed_undos) > already:
            finished = guard.completed_undos[already:]
            outcome = _completed_outcome(guard.journal, finished)
            self.emit(undo_event(outcome, session_id or ""))
            return outcome
        applied = [
            e for e in guard.journal.entries(guard.key, states=["applied"], session_id=session_id) if not e.undone_by
        ]  # an undo under way in another process has claimed it
        if to is not None:
            start = self.resolve(to)
            chosen = [
                e
                for e in guard.journal.entries(guard.key, states=["applied"])
                if not e.undone_by and _after_or_at(e, start, guard)
            ]
            what = f"since checkpoint {start.id}"
        else:
            chosen = applied[-(steps or 1) :] if steps is not None or session_id is None else applied
            if recognisable and steps == 1 and applied:  # back to the latest change a person would see, with
                last = next((i for i in range(len(applied) - 1, -1, -1) if _recognisable(applied[i])), None)
                chosen = applied[last:] if last is not None else chosen  # the cache-only ones after it
            what = f"in session {session_id}" if session_id else "in this workspace"
        if not chosen:
            raise UndoError(f"nothing to undo {what}: no applied change monkey made is left")
        outcome = apply_undo(self.guard, chosen, force=force)
        self.emit(undo_event(outcome, session_id or ""))
        return outcome

    def restore(self, ident: str, *, force: bool = False) -> UndoOutcome:
        """Put every file monkey changed at or after checkpoint ``ident`` back as it was then."""
        return self.undo(to=ident, force=force)

    # -- housekeeping ----------------------------------------------------------------

    def gc(self, *, keep_days: float | None = None, max_size: int | None = None) -> GcResult:
        """Drop checkpoints older than ``keep_days``, then the oldest until under ``max_size``."""
        guard, shadow = self.guard, self.guard.shadow
        result = GcResult(size_before=self.size())
        if not shadow.exists():
            return result
        journal = guard.journal
        everything = journal.entries(guard.key, kind=None)
        known = {e.id for e in everything}
        droppable = [e for e in everything if e.state != "pending"]
        drop: list[Entry] = []
        if keep_days is not None:
            cutoff = time.time() - keep_days * 86400
            drop = [e for e in droppable if e.created_at < cutoff]
        with shadow.locked():
            refs = shadow.git("for-each-ref", "--format=%(refname:lstrip=2)", "refs/monkey/", work_tree=False)
            orphans = [r for r in refs.decode().split() if r not in known]
            self._drop(drop + [], orphans, result)
            shadow.gc()
            remaining = [e for e in droppable if e not in drop]
            while max_size is not None and shadow.size() > max_size and remaining:
                half = remaining[: max(1, len(remaining) // 2)]
                remaining = remaining[len(half) :]
                self._drop(half, [], result)
                shadow.gc()
        result.size_after = shadow.size()
        return result

    def _drop(self, entries: builtins.list[Entry], orphans: builtins.list[str], result: GcResult) -> None:
        ids = [e.id for e in entries]
        self.guard.shadow.delete_refs(ids + orphans)
        self.guard.journal.delete(ids)
        result.removed += ids

    def status(self) -> str:
        """One line: where the shadow repository is and how big."""
        entries = self.entries()
        undoable = sum(1 for e in entries if e.state == "applied")
        if not self.guard.shadow.exists():
            return f"shadow repository {self.shadow_path} (not created yet)"
        return (
            f"shadow repository {self.shadow_path} ({human_size(self.size())}); "
            f"{len(entries)} checkpoint(s), {undoable} undoable"
        )


def undo_event(outcome: UndoOutcome, session_id: str = "") -> UndoApplied:
    """The ``undo_applied`` event of an undo (paths that are not UTF-8 shown with U+FFFD)."""

    def shown(paths: list[str]) -> list[str]:
        return [printable(p) for p in paths]

    return UndoApplied(
        session_id=session_id,
        undo_id=outcome.undo_id,
        checkpoint_ids=outcome.checkpoint_ids,
        paths=shown(outcome.paths),
        removed=shown(outcome.removed),
        restored=shown(outcome.restored),
        forced=outcome.forced,
        left_alone=shown(outcome.left_alone),
    )


def _completed_outcome(journal: Journal, undos: list[Entry]) -> UndoOutcome:
    """The outcome of interrupted undos that a repair has just completed."""
    last = undos[-1]
    claimed = [i for u in undos for i in journal.undone_by(u.id)]
    return UndoOutcome(
        undo_id=last.id,
        checkpoint_ids=claimed,
        paths=[r.path for u in undos for r in u.files],
        removed=[r.path for u in undos for r in u.files if r.after_sha is None and r.before_sha is not None],
        restored=[r.path for u in undos for r in u.files if r.after_sha is not None and r.before_sha is None],
        completed_interrupted=True,
    )


def _after_or_at(entry: Entry, start: Entry, guard: CheckpointGuard) -> bool:
    """Whether ``entry`` was written at or after ``start`` (journal order)."""
    row = guard.journal.conn.execute(
        "SELECT (SELECT rowid FROM journal_entries WHERE id = ?) >= (SELECT rowid FROM journal_entries WHERE id = ?)",
        (entry.id, start.id),
    ).fetchone()
    return bool(row and row[0])
