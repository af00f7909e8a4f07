"""The change guard: a checkpoint and a pending journal entry before every change.

:class:`CheckpointGuard` is what the agent loop calls around a dangerous tool (see
``monkey.agent.changes``). File tools get a checkpoint of exactly the paths they touch,
written straight into the shadow object database, so the cost follows the change and not
the repository. Shell commands get a whole-tree snapshot before and after (the shadow
index and git's stat cache make it cheap when little changed); the difference, minus what
monkey cannot attribute to the command (``attribution``, with the ``watch`` where the
platform has one), judged by the ignore rules from before it (``ignore``), is what the
command changed; what the snapshots could not hold is named (``outside``). Where the write
watch runs, it lives as long as the guard and the snapshots are brought forward from the
last one by the paths written since (``live``), so they cost what changed; a full
snapshot is taken where that cannot be sure to give the same tree.

:meth:`CheckpointGuard.repair` finishes what a killed monkey left ``pending``.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import weakref
from pathlib import Path

from monkey import children
from monkey.checkpoints import watch as write_watch
from monkey.checkpoints.attribution import attribute
from monkey.checkpoints.errors import CheckpointError
from monkey.checkpoints.fsops import (
    FileState,
    PathError,
    missing_dirs,
    read_state,
    remove_empty_tree,
    remove_temp_files,
    same,
    write_state,
)
from monkey.checkpoints.gitrun import GitError
from monkey.checkpoints.ignore import reconcile, touches_gitignore
from monkey.checkpoints.journal import Entry, FileRecord, Journal
from monkey.checkpoints.live import LiveTree
from monkey.checkpoints.outside import judge
from monkey.checkpoints import records
from monkey.checkpoints.shadow import Outside, ShadowRepo, git_mode
from monkey.checkpoints.trees import Trees
from monkey.db import DatabaseError, db_path
from monkey.ids import new_id

__all__ = ["CheckpointGuard", "DEFAULT_MAX_FILE_SIZE", "human_size"]

BEAT = 0.5
"""Seconds between two heartbeats of a process with a shell command under way."""
OWNER_LOCK_AGE = 3600.0
"""Seconds after which a dead process's owner lock with nothing pending is removed."""
FAULT_NO_HEARTBEAT = "MONKEY_FAULT_NO_HEARTBEAT"
"""Set (tests only): the heartbeats stop after the first, as a starved thread's would."""

DEFAULT_MAX_FILE_SIZE = 50 * 1024 * 1024
"""Files larger than this need a person's approval to change (and are left out of shell snapshots)."""


def human_size(n: float) -> str:
    """``"1.2 MB"``."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{int(n)} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


class CheckpointGuard:
    """Checkpoints and the journal of one workspace."""

    def __init__(self, workspace: Path, *, home: Path, max_file_size: int = DEFAULT_MAX_FILE_SIZE) -> None:
        self.shadow = ShadowRepo(workspace, home)
        self.workspace = self.shadow.workspace
        self.key = str(self.workspace)
        """How the journal names this workspace."""
        self.max_file_size = max_file_size
        self.home = home
        self._local = threading.local()
        self._mutex = threading.Lock()
        self._owner = ""
        self._owner_fd: int | None = None
        self.trees = Trees(self.shadow)
        """The shadow's trees, read and written in process."""
        self._live: LiveTree | None = None
        self._stoppers: list[write_watch.WriteWatch] = []
        weakref.finalize(self, _stop_all, self._stoppers)
        self._windows: dict[str, write_watch.Window] = {}
        self._outside: dict[str, Outside] = {}
        self._beating: set[str] = set()
        self._beat_thread: threading.Thread | None = None
        self.full_because = ""
        """Why the last whole-tree snapshot around a command was a full one, not brought forward."""
        self.completed_undos: list[Entry] = []
        """Interrupted undos that :meth:`repair` completed in this process, oldest first."""

    # -- plumbing --------------------------------------------------------------------

    @property
    def journal(self) -> Journal:
        """This thread's journal connection (SQLite connections stay in their thread)."""
        journal = getattr(self._local, "journal", None)
        if journal is None:
            journal = Journal(db_path(self.home))
            self._local.journal = journal
        return journal

    def _own(self) -> str:
        """This process's owner lock: held while it lives, so others know its entries are live."""
        if self._owner_fd is None:
            owners = self.shadow.root / "owners"
            owners.mkdir(parents=True, exist_ok=True)
            name = f"{os.getpid()}-{os.urandom(4).hex()}"
            fd = os.open(owners / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._owner, self._owner_fd = name, fd
            children.mark_on_death(owners / f"{name}.lock")  # the moment its commands died, if killed
        return self._owner

    def _owner_alive(self, owner: str) -> bool:
        if not owner or owner == self._owner:
            return owner == self._owner and bool(owner)
        path = self.shadow.root / "owners" / f"{owner}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _live_tree(self) -> LiveTree | None:
        """The workspace's tree kept current from the write watch (started on first use), or None
        where no watch can run."""
        if self._live is None:
            watch = write_watch.start(self.workspace)
            if watch is None:
                return None
            self._stoppers.append(watch)
            self._live = LiveTree(self.trees, watch, self.max_file_size)
        return self._live

    @property
    def watching(self) -> bool:
        """Whether the write watch runs (shell commands' snapshots are then brought forward)."""
        return self._live is not None

    def watch_missing(self) -> str:
        """Why the write watch cannot run here ("" when it runs or can): without it, a person's
        write during a shell command counts as the command's (see :mod:`~monkey.checkpoints.attribution`)."""
        return "" if self._live is not None else write_watch.missing(self.workspace)

    def close(self) -> None:
        """Stop the write watch (the guard starts it again if it is used after)."""
        with self._mutex:
            self._live = None
            _stop_all(self._stoppers)

    def _heartbeat(self, entry_id: str) -> None:
        """While a whole-tree change is pending, touch the owner lock every ``BEAT`` seconds, so a
        repair knows when a killed monkey was last alive (its children die with it)."""
        self._beating.add(entry_id)
        if self._beat_thread is not None and self._beat_thread.is_alive():
            return
        path = self.shadow.root / "owners" / f"{self._own()}.lock"

        starved = bool(os.environ.get(FAULT_NO_HEARTBEAT))

        def beat() -> None:
            while self._beating:
                try:
                    if not starved:
                        os.utime(path)
                except OSError:
                    pass
                time.sleep(BEAT)

        os.utime(path)
        self._beat_thread = threading.Thread(target=beat, name="monkey-checkpoint-heartbeat", daemon=True)
        self._beat_thread.start()

    def _last_beat(self, owner: str) -> float | None:
        """The latest time a dead owner's commands can have changed something (None: unknown):
        when its guardian killed them, else its last heartbeat, and a margin for the
        file system's coarse clock."""
        path = self.shadow.root / "owners" / f"{owner}.lock"
        died = children.death_mark(path)
        if died is not None:
            return died + BEAT
        try:
            return os.stat(path).st_mtime + 2 * BEAT
        except OSError:
            return None

    def _forget_owner(self, owner: str) -> None:
        if owner and owner != self._owner:
            for name in (f"{owner}.lock", f"{owner}.lock.guard"):
                try:
                    os.unlink(self.shadow.root / "owners" / name)
                except OSError:
                    pass

    # -- the loop's side -------------------------------------------------------------

    def oversized(self, paths: list[str]) -> list[str]:
        """Warnings for existing files above the size limit."""
        warnings = []
        for rel in paths:
            try:
                size = os.lstat(self.workspace / rel).st_size
            except OSError:
                continue
            if size > self.max_file_size:
                warnings.append(
                    f"{rel} is {human_size(size)}, over the checkpoint limit of {human_size(self.max_file_size)}: "
                    "monkey stores a full copy of it to make this change undoable"
                )
        return warnings

    def begin(self, *, tool: str, paths: list[str] | None, session_id: str, turn: int, call_id: str) -> Entry:
        """Take the checkpoint and write the pending entry (raises CheckpointError)."""
        try:
            with self._mutex:
                return self._begin(tool, paths, session_id, turn, call_id)
        except (GitError, PathError, DatabaseError, OSError, ValueError) as exc:
            raise CheckpointError(f"checkpoint failed, so the change was not made: {exc}") from None

    def carry_on(self, pending: Entry, *, turn: int) -> tuple[Entry, str]:
        """Finish a whole-tree change that goes on (a background process's) and begin its next one,
        counted to ``turn``, where it ended: the next checkpoint is this change's after-tree, and the
        next write window opens before this one closes, so a write between the two changes is in one
        of them, never in neither. Returns the next entry and a warning when this change could not be
        recorded (the next then starts from a snapshot of its own); raises CheckpointError."""
        with self._mutex:
            live = self._live_tree()
            window = live.watch.open() if live is not None else None
            warning, start = "", None
            try:
                after = self._complete(pending, ok=True, error="", ended=time.time())
                if pending.after_tree and after is not None:
                    start = (pending.after_tree, after)
            except (GitError, PathError, DatabaseError, OSError, ValueError) as exc:
                warning = f"the change of checkpoint {pending.id} could not be recorded ({exc}); it stays pending"
            try:
                entry = self._begin(
                    pending.tool, None, pending.session_id, turn, pending.call_id, window=window, start=start
                )
            except (GitError, PathError, DatabaseError, OSError, ValueError) as exc:
                if window is not None:
                    window.close()
                raise CheckpointError(f"checkpoint failed, so the change was not made: {exc}") from None
        return entry, warning

    def _begin(
        self,
        tool: str,
        paths: list[str] | None,
        session_id: str,
        turn: int,
        call_id: str,
        *,
        window: write_watch.Window | None = None,
        start: tuple[str, Outside] | None = None,
    ) -> Entry:
        """``window``: the write window opened for it already; ``start``: its before-tree (and what that
        cannot hold) already taken."""
        if paths is not None and not paths:
            raise ValueError("no paths to checkpoint")
        self.shadow.ensure()
        cid = new_id("c")
        entry = Entry(
            id=cid,
            workspace=self.key,
            kind="change",
            state="pending",
            tool=tool,
            session_id=session_id,
            turn=turn,
            call_id=call_id,
            owner=self._own(),
        )
        if window is None:
            live = self._live_tree() if paths is None else None
            window = live.watch.open() if live is not None else None
        if paths is None:
            self._heartbeat(cid)
        if window is not None:
            self._windows[cid] = window
        try:
            self._take(entry, paths, window, start)
            self.journal.add(entry)
        except BaseException:
            self._outside.pop(cid, None)
            self._beating.discard(cid)
            if window is not None:
                self._windows.pop(cid, None)
                window.close()
            raise
        return entry

    def _whole_tree(self, window: write_watch.Window | None) -> tuple[str, Outside, bool]:
        """The workspace's tree now and what it cannot hold (call it holding the shadow's lock):
        brought forward from the writes seen where it can be, else a full snapshot. The flag
        says which (True: brought forward)."""
        live, seq = self._live, (window.end if window.end is not None else window.start) if window else 0
        if live is None or window is None:
            self.full_because = "no write watch"
        elif window.lost:
            self.full_because = write_watch.FORGOTTEN
        elif (got := live.current(seq)) is not None:
            return got[0], got[1], True
        else:
            self.full_because = live.unsure
        tree, outside = self.shadow.snapshot(self.max_file_size)
        if live is not None and window is not None:
            live.reset(tree, outside, seq)
        return tree, outside, False

    def _take(
        self,
        entry: Entry,
        paths: list[str] | None,
        window: write_watch.Window | None = None,
        start: tuple[str, Outside] | None = None,
    ) -> None:
        tool, cid = entry.tool, entry.id
        with self.shadow.locked():
            if paths is None:
                tree, outside = start if start is not None else self._whole_tree(window)[:2]
                self._outside[cid] = outside
                if outside.skipped:
                    entry.note = f"not in the snapshot (over {human_size(self.max_file_size)}): " + ", ".join(
                        outside.skipped
                    )
            else:
                leaves: dict[str, tuple[str, str]] = {}
                for rel in dict.fromkeys(paths):
                    state = read_state(self.workspace, rel)
                    record = FileRecord(rel, None)
                    if state is None:
                        record.created_dirs = missing_dirs(self.workspace, rel)
                    else:
                        record.before_sha = self.shadow.store_blob(state.data)
                        record.before_mode = state.mode
                        leaves[rel] = (git_mode(state.mode), record.before_sha)
                    entry.files.append(record)
                tree = self.shadow.write_tree(leaves)
            entry.before_tree = tree
            entry.checkpoint = self.shadow.commit(tree, f"before {tool} {cid}")
            self.shadow.set_ref(cid, entry.checkpoint)

    def claim(self, pending: Entry, pid: int, *, children: bool = False) -> None:
        """A process the change's call started (a shell command): its writes, and its
        descendants', are that call's and no other's (two commands at once in one monkey);
        ``children``: only its descendants', while the change is open (an agent running its own command)."""
        window = self._windows.get(pending.id)
        if window is not None:
            window.claim(pid, children=children)

    def finish(self, pending: Entry, *, ok: bool, error: str = "") -> str:
        """Record the change's result; returns a warning when it could not be recorded."""
        ended = time.time()
        try:
            with self._mutex:
                self._complete(pending, ok=ok, error=error, ended=ended)
        except (GitError, PathError, DatabaseError, OSError, ValueError) as exc:
            return (
                f"the change of checkpoint {pending.id} could not be recorded ({exc}); "
                "it stays pending and is repaired at the next start"
            )
        return ""

    def line_counts(self, entry: Entry) -> tuple[int, int, int]:
        """``(lines added, lines removed, files changed)`` by a finished change (see :mod:`~monkey.checkpoints.records`)."""
        return records.line_counts(self.shadow, entry)

    def _complete(
        self, entry: Entry, *, ok: bool, error: str, unchanged: str = "", ended: float = 0.0, killed: bool = False
    ) -> Outside | None:
        """Record the change; what its after-tree cannot hold (None: not a whole-tree change)."""
        window = self._windows.pop(entry.id, None)
        self._beating.discard(entry.id)
        try:
            after = self._complete_locked(
                entry, ok=ok, error=error, unchanged=unchanged, ended=ended or time.time(), killed=killed, window=window
            )
        finally:
            if window is not None:
                window.close()
        self.journal.finish(entry)
        return after

    def _complete_locked(
        self,
        entry: Entry,
        *,
        ok: bool,
        error: str,
        unchanged: str,
        ended: float,
        killed: bool,
        window: write_watch.Window | None,
    ) -> Outside | None:
        after: Outside | None = None
        with self.shadow.locked():
            if not entry.files and entry.before_tree:  # a whole-tree snapshot: diff it
                if window is not None:
                    window.close()  # every write of the command is read
                tree, after, forward = self._whole_tree(window)
                skipped = after.skipped
                changes = (self.trees.diff if forward else self.shadow.diff_trees)(entry.before_tree, tree)
                entry.files = records.without_placeholders(
                    self.home,
                    self.workspace,
                    self.shadow,
                    [
                        FileRecord(c.path, c.old_sha, c.old_mode, c.new_sha, c.new_mode, exact_mode=False)
                        for c in changes
                    ],
                )
                if touches_gitignore(entry.files):
                    entry.note = "; ".join(
                        x for x in (entry.note, reconcile(self.shadow, entry, self.max_file_size)) if x
                    )
                before = self._outside.pop(entry.id, None)
                judge(
                    self.workspace,
                    entry,
                    before,
                    after,
                    limit=human_size(self.max_file_size),
                    tracked=lambda paths: {p for p in paths if self.trees.is_file(entry.before_tree, p)},
                    changed_inside=window.first_change_under if window is not None and not window.lost else None,
                )
                attribute(self.journal, self.workspace, entry, watch=window, ended=ended, killed=killed)
                records.note_created_dirs(self.trees, entry, set(before.empty) if before is not None else set())
                if skipped:
                    more = f"not in the snapshot (over {human_size(self.max_file_size)}): " + ", ".join(skipped)
                    entry.note = "; ".join(x for x in (entry.note, more) if x)
                entry.after_tree = tree
            else:
                leaves: dict[str, tuple[str, str]] = {}
                for record in entry.files:
                    state = read_state(self.workspace, record.path)
                    record.after_sha = self.shadow.store_blob(state.data) if state is not None else None
                    record.after_mode = state.mode if state is not None else 0
                    if state is not None and record.after_sha is not None:
                        leaves[record.path] = (git_mode(state.mode), record.after_sha)
                entry.after_tree = self.shadow.write_tree(leaves)
            changed = [
                r
                for r in entry.files
                if r.path.endswith("/")  # a folder the call created
                or not (r.before_sha == r.after_sha and (r.before_mode == r.after_mode or r.before_sha is None))
            ]
            if changed:
                entry.files = changed
            if changed:
                entry.state = "applied"
                entry.after_commit = self.shadow.commit(
                    entry.after_tree, f"after {entry.tool} {entry.id}", parent=entry.checkpoint
                )
                self.shadow.set_ref(entry.id, entry.after_commit)
            else:
                entry.state = unchanged or ("unchanged" if ok else "failed")
            if error:
                entry.note = "; ".join(x for x in (entry.note, error) if x)
        return after

    # -- crash repair ----------------------------------------------------------------

    def repair(self) -> list[str]:
        """Finish entries left pending by a monkey process that is gone; one message each."""
        messages: list[str] = []
        # a killed monkey's sandbox mount points, were its guardian killed too: monkey's, never a change
        children.remove_dead_placeholders(self.home / "children")
        if self.shadow.exists():
            try:
                with self._mutex, self.shadow.locked():
                    cleared = self.shadow.clear_stale_lock(wait=0)
            except GitError as exc:
                cleared = str(exc)
            if cleared:
                messages.append(cleared)
        with self._mutex:
            pending = self.journal.entries(self.key, kind=None, states=["pending"])
        for entry in pending:
            if self._owner_alive(entry.owner):
                continue
            try:
                if entry.kind == "undo":
                    messages.append(self._repair_undo(entry))
                else:
                    messages.append(self._repair_change(entry))
            except (GitError, PathError, DatabaseError, OSError, ValueError) as exc:
                messages.append(f"could not repair interrupted checkpoint {entry.id}: {exc}")
                continue
            left = [t for rec in entry.files for t in remove_temp_files(self.workspace, rec.path)]
            if left:
                messages.append(
                    f"removed {len(left)} temporary file(s) the interrupted "
                    f"{'undo' if entry.kind == 'undo' else 'change'} {entry.id} left: {', '.join(left)}"
                )
            self._forget_owner(entry.owner)
        self._sweep_owners({e.owner for e in pending})
        return messages

    def _sweep_owners(self, keep: set[str]) -> None:
        """Remove the owner locks of processes long gone that left nothing pending (one small
        file per monkey process would pile up otherwise)."""
        owners = self.shadow.root / "owners"
        cutoff = time.time() - OWNER_LOCK_AGE
        try:
            paths = [p for p in owners.glob("*.lock") if p.stem not in keep and p.stem != self._owner]
        except OSError:
            return
        for path in paths:
            try:
                if path.stat().st_mtime > cutoff or self._owner_alive(path.stem):
                    continue
            except OSError:
                continue
            self._forget_owner(path.stem)

    def _repair_change(self, entry: Entry) -> str:
        died = self._last_beat(entry.owner) if not entry.files and entry.before_tree else None
        with self._mutex:  # a whole-tree change: what changed after monkey's last heartbeat is not its
            self._complete(
                entry,
                ok=False,
                error="interrupted: monkey stopped during this change",
                unchanged="abandoned",
                ended=died or 0.0,
                killed=died is None and not entry.files,
            )
        what = ", ".join(entry.paths) or "files"
        if entry.state == "applied":
            return (
                f"repaired checkpoint {entry.id}: monkey was stopped while {entry.tool} changed {what}; "
                f"the change is kept and recorded (monkey undo reverts it)"
            )
        target = ", ".join(entry.paths) or "anything"
        return (
            f"repaired checkpoint {entry.id}: monkey was stopped before {entry.tool} changed {target}; "
            "nothing was changed"
        )

    def _repair_undo(self, entry: Entry) -> str:
        """An undo stopped half-way is completed: every file gets the state the undo was for."""
        left: list[str] = []
        with self._mutex, self.shadow.locked():
            for rec in entry.files:
                if rec.path.endswith("/"):  # an empty folder the undone change had created
                    remove_empty_tree(self.workspace, rec.path)
                    continue
                current = read_state(self.workspace, rec.path)
                if same(current, rec.after_sha, rec.after_mode, rec.exact_mode):
                    continue
                if not same(current, rec.before_sha, rec.before_mode, rec.exact_mode):
                    left.append(rec.path)
                    continue
                target = (
                    None if rec.after_sha is None else FileState(rec.after_mode, self.shadow.read_blob(rec.after_sha))
                )
                write_state(self.workspace, rec.path, target, exact_mode=rec.exact_mode, created_dirs=rec.created_dirs)
            entry.state = "applied"
            self.completed_undos.append(entry)
            entry.note = "completed after an interruption" + (
                f"; changed by someone else meanwhile, left as they are: {', '.join(left)}" if left else ""
            )
            self.journal.finish_undo(entry)
        tail = f" ({len(left)} file(s) changed meanwhile were left alone: {', '.join(left)})" if left else ""
        return f"repaired undo {entry.id}: monkey was stopped during an undo; it is now complete{tail}"


def _stop_all(watches: list[write_watch.WriteWatch]) -> None:
    """Stop a guard's write watches (when it is closed or collected)."""
    while watches:
        watches.pop().stop()
