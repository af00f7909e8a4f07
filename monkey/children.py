"""Every process monkey starts dies with monkey, grandchildren included.

Four mechanisms, each covering what the one before cannot:

- **Parent-death signal.** Each child gets ``PR_SET_PDEATHSIG(SIGKILL)`` between ``fork``
  and ``exec`` (:func:`preexec`), so a ``kill -9`` of monkey kills it at once. The signal is
  not inherited by the child's own children.
- **A tag.** Each child gets ``MONKEY_CHILD=<owner>.<n>`` in its environment, which its
  descendants inherit, even those that leave the process group (``setsid``, ``nohup``, a
  daemon). At the end of a command (and at its wall-clock timeout) :func:`strays` finds the
  command's processes outside its group by that tag, so the group and its strays are stopped
  together and the cap bounds the whole tree.
- **A subreaper.** monkey calls ``PR_SET_CHILD_SUBREAPER`` (:func:`install`), so an orphaned
  grandchild is re-parented to monkey instead of init: one that also cleared its environment
  is still found (a child of monkey in a session of its own that monkey did not start), and
  the ones monkey stops are reaped, not left as zombies.
- **A guardian and records.** :func:`install` keeps a record of the children of this monkey
  (its pid and start time, each child's pid and start time) in the monkey home, and starts
  one small guardian process that waits for monkey's end (its pipe closes, however monkey
  died) and then kills every process carrying monkey's tag. Were the guardian killed too,
  the next ``monkey`` to start finds the record of a dead owner and does the same. A pid is
  only ever signalled when its start time (``/proc/PID/stat``) is the recorded one, or when
  it carries the tag, so a recycled pid is never touched.

The guardian also tells when the children were gone: :func:`mark_on_death` names a file
whose times it sets to that moment, after it killed them, holding ``FILE.guard`` locked
until then (:func:`death_mark` waits for it), so a repair after a kill knows up to when a
change in the workspace can have been a dead command's.

Linux only (``prctl`` and ``/proc``); elsewhere these are no-ops and only the process group
is stopped. This module imports nothing of monkey.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "TAG_VAR",
    "install",
    "preexec",
    "new_tag",
    "register",
    "forget",
    "settled",
    "start_guardian",
    "tag_of",
    "strays",
    "reap",
    "alive",
    "start_time",
    "parent_of",
    "name_of",
    "clean_dead_owners",
    "tagged",
    "kill",
    "kill_everything",
    "mark_on_death",
    "death_mark",
    "hold_placeholder",
    "drop_placeholder",
    "remove_dead_placeholders",
    "placeholders",
]

TAG_VAR = "MONKEY_CHILD"
"""The environment variable that marks monkey's children and their descendants."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_LINUX = sys.platform.startswith("linux")

_prctl: Callable[..., int] | None = None
_owner = ""
_count = 0
_tags: dict[int, str] = {}
"""Live children monkey started, by pid: their tag."""
_pending: set[str] = set()
"""Tags of children being started (forked maybe, not yet registered): no other command's strays."""
_records: Path | None = None
_guardian: subprocess.Popen[bytes] | None = None
_guard_pipe: int | None = None
_marks: list[str] = []
"""Files the guardian touches once monkey's children are dead (see :func:`mark_on_death`)."""
_started: list[tuple[int, int]] = []
_record_lock = threading.Lock()
_placeholders: dict[str, str] = {}
"""Empty files or folders made on the host as a sandbox's mount points, by path: their kind."""
_ever_held: set[str] = set()
"""Every placeholder this monkey held (a snapshot may have caught one since removed)."""


def _libc_prctl() -> Callable[..., int] | None:
    global _prctl
    if _prctl is None and _LINUX:
        try:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return None
    return _prctl


def _stat(pid: int) -> list[bytes] | None:
    """Fields of ``/proc/PID/stat`` after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def parent_of(pid: int) -> int | None:
    """The process's parent, or None when there is no such process."""
    fields = _stat(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def name_of(pid: int) -> str:
    """The process's command name (``/proc/PID/comm``), or ``""``."""
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot), or None when there is no such process."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def alive(pid: int, start: int | None = None) -> bool:
    """Whether ``pid`` is a live (not zombie) process, started at ``start`` when given."""
    fields = _stat(pid)
    if not fields or len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return False
    return start is None or int(fields[19]) == start


def _owner_id() -> str:
    global _owner
    if not _owner or not _owner.startswith(f"{os.getpid()}-"):  # none yet, or a forked copy of monkey (another owner)
        _owner = f"{os.getpid()}-{start_time(os.getpid()) or 0}"
    return _owner


def new_tag() -> str:
    """A tag for the next child: this monkey's id and a number; pending until :func:`register` or :func:`settled`."""
    global _count
    _count += 1
    tag = f"{_owner_id()}.{_count}"
    _pending.add(tag)
    return tag


def settled(tag: str) -> None:
    """The child tagged ``tag`` was registered, or never will be (it could not start)."""
    _pending.discard(tag)


def preexec() -> Callable[[], None]:
    """The function to run in a child between fork and exec: die with this process.

    Works with ``start_new_session=True`` (it runs after ``setsid``). When monkey died before
    the child got there, the child exits at once.
    """
    parent = os.getpid()
    prctl = _libc_prctl()

    def setup() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)

    return setup


def register(pid: int, tag: str) -> None:
    """Note a child monkey started (its pid leads its process group), in memory and in the record."""
    _tags[pid] = tag
    _pending.discard(tag)
    start = start_time(pid)
    if start is not None:
        _started.append((pid, start))
        _write_record()
    _ensure_guardian()


def start_guardian() -> None:
    """Start the guardian now if none runs: before a child is forked, so one that is never registered
    (its start was interrupted) still dies with monkey, by its tag."""
    _ensure_guardian()


def forget(pid: int) -> None:
    """The child has exited and was reaped."""
    _tags.pop(pid, None)


def tag_of(pid: int) -> str | None:
    """The tag of a child monkey started."""
    return _tags.get(pid)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _environ_has(pid: int, entry: bytes, *, exact: bool = False) -> bool:
    """Whether the process's environment has ``entry`` (``NAME=value``), or one starting with it."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    items = data.split(b"\0")
    return entry in items if exact else any(item.startswith(entry) for item in items)


def tagged(prefix: str) -> list[tuple[int, int]]:
    """Live processes whose environment has a tag starting with ``prefix``: (pid, start time)."""
    if not _LINUX:
        return []
    want = f"{TAG_VAR}={prefix}".encode()
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid == me:
            continue
        fields = _stat(pid)
        if fields and len(fields) > 19 and fields[0] not in (b"Z", b"X") and _environ_has(pid, want):
            found.append((pid, int(fields[19])))
    return found


def strays(tag: str, pgid: int) -> list[tuple[int, int]]:
    """The processes of the child tagged ``tag`` that left its group ``pgid``: (pid, start time).

    Those carrying the tag, plus orphans re-parented to monkey (the subreaper) in a session
    monkey did not start, which cleared their environment. Children monkey started itself
    (and the guardian) are never strays, nor are orphans that carry another live child's tag or
    sit in its group or session (what a background command that exited left running is its own),
    nor a child still being started (forked, not yet registered: it carries a pending tag).
    """
    if not _LINUX:
        return []
    me = os.getpid()
    my_sid = os.getsid(0)
    want = f"{TAG_VAR}={tag}".encode()
    guardian = _guardian.pid if _guardian is not None else -1
    others = {other for other in _tags if other != pgid}
    found = []
    for pid in _pids():
        if pid in (me, guardian) or pid in _tags:
            continue
        fields = _stat(pid)
        if not fields or len(fields) < 20 or fields[0] in (b"Z", b"X") or int(fields[2]) == pgid:
            continue
        if _environ_has(pid, want, exact=True):
            found.append((pid, int(fields[19])))
        elif int(fields[1]) == me and int(fields[3]) != my_sid and not _others(pid, fields, others):
            found.append((pid, int(fields[19])))  # an orphan whose tag (if any) is no other child's
    return found


def _others(pid: int, fields: list[bytes], others: set[int]) -> bool:
    """Whether a process belongs to another live child monkey started: in its group or session, or
    carrying its tag (or the tag of a child still being started, not yet registered)."""
    if int(fields[2]) in others or int(fields[3]) in others:
        return True
    tags = [f"{TAG_VAR}={_tags[other]}".encode() for other in others if other in _tags]
    tags += [f"{TAG_VAR}={tag}".encode() for tag in _pending]
    return any(_environ_has(pid, entry, exact=True) for entry in tags)


def reap(pids: list[tuple[int, int]]) -> None:
    """Collect the exit status of stopped strays that were re-parented to monkey (no zombies left)."""
    for pid, _ in pids:
        if pid in _tags:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def kill(pids: list[tuple[int, int]], sig: int) -> None:
    """Send ``sig`` to each process that still has the recorded start time."""
    for pid, start in pids:
        if alive(pid, start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def _kill_group(pgid: int, start: int) -> None:
    """SIGKILL a recorded process group, only while its leader is the recorded process."""
    if alive(pgid, start):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def kill_everything() -> None:
    """SIGKILL every child monkey started, its group and its strays, now (monkey is about to exit)."""
    for pid, tag in list(_tags.items()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        kill(strays(tag, pid), signal.SIGKILL)


def _write_record() -> None:
    with _record_lock:  # threads start commands (and make placeholders) at once
        _write_record_now()


def _write_record_now() -> None:
    if _records is None:
        return
    record: dict[str, Any] = {
        "pid": os.getpid(),
        "start": start_time(os.getpid()) or 0,
        "owner": _owner_id(),
        "children": [[pid, start] for pid, start in _started if alive(pid, start)],
        "placeholders": sorted([path, kind] for path, kind in _placeholders.items()),
    }
    _started[:] = [(pid, start) for pid, start in record["children"]]
    path = _records / f"{_owner_id()}.json"
    tmp = path.with_suffix(".tmp")
    try:
        _records.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
    except OSError:
        pass  # a full or read-only home: the parent-death signal and the guardian still hold


def hold_placeholder(path: Path, kind: str) -> None:
    """Note, before it is made, an empty file (``kind`` "file") or folder ("dir") at ``path`` that
    a sandboxed child needs as a mount point: were monkey killed before :func:`drop_placeholder`,
    the guardian (or the next monkey, :func:`remove_dead_placeholders`) removes it, still empty."""
    _placeholders[str(path)] = kind
    _ever_held.add(str(path))
    _write_record()


def drop_placeholder(path: Path) -> None:
    """The placeholder at ``path`` is gone (or no longer monkey's): forget it."""
    if _placeholders.pop(str(path), None) is not None:
        _write_record()


def placeholders(folder: Path | None = None) -> set[str]:
    """The placeholders this monkey holds or held and those the records in ``folder`` name (other
    monkeys', running or dead), as absolute paths: monkey's own, never a command's change."""
    found = set(_placeholders) | _ever_held
    try:
        paths = sorted(folder.glob("*.json")) if folder is not None else []
    except OSError:
        paths = []
    for path in paths:
        with contextlib.suppress(OSError, ValueError, TypeError, IndexError, AttributeError):
            found.update(str(item[0]) for item in json.loads(path.read_text()).get("placeholders", []))
    return found


def _remove_placeholders(record: dict) -> None:
    """Remove what a dead owner's record names as placeholders, each only while it is still an
    empty folder or an empty file (something outside the sandbox wrote into it: the person's)."""
    for item in record.get("placeholders", []):
        with contextlib.suppress(OSError, ValueError, TypeError):
            path, kind = str(item[0]), str(item[1])
            if kind == "dir" and os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # fails (and stays) when it is not empty
            elif kind == "file" and os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == 0:
                os.unlink(path)


def _clean(record: dict) -> int:
    """Kill what a dead owner's record names, then remove its placeholders; the number of processes
    signalled."""
    owner = str(record.get("owner", ""))
    victims = tagged(owner + ".") if owner else []
    kill(victims, signal.SIGKILL)
    for pid, start in record.get("children", []):
        _kill_group(int(pid), int(start))
    _remove_placeholders(record)
    return len(victims)


def _dead_records(folder: Path) -> list[tuple[Path, dict]]:
    """The records in ``folder`` of monkeys no longer running (unreadable ones removed)."""
    found = []
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            record = json.loads(path.read_text())
            pid, start = int(record["pid"]), int(record["start"])
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if pid == os.getpid() or alive(pid, start):
            continue
        found.append((path, record))
    return found


def remove_dead_placeholders(folder: Path) -> None:
    """Remove the placeholders that monkeys recorded in ``folder`` and no longer running left (their
    guardian was killed too); their records stay for :func:`clean_dead_owners`."""
    for path, record in _dead_records(folder):
        if record.get("placeholders"):
            _remove_placeholders(record)
            record["placeholders"] = []
            with contextlib.suppress(OSError):
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(record))
                os.replace(tmp, path)


def clean_dead_owners(folder: Path) -> int:
    """Kill the orphans of every monkey recorded in ``folder`` that is no longer running.

    An owner counts as running when a process with its pid and start time exists. Returns the
    number of orphans killed; the records of dead owners are removed.
    """
    killed = 0
    for path, record in _dead_records(folder):
        killed += _clean(record)
        with contextlib.suppress(OSError):
            path.unlink()
    return killed


def install(records: Path | None) -> int:
    """Make this process the supervisor of its children's trees, and clean up after dead runs.

    Sets the subreaper flag, remembers ``records`` (a folder in the monkey home; None keeps no
    records) and kills the orphans that monkeys which died left there. Returns how many.
    """
    global _records
    prctl = _libc_prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _records = records
    return clean_dead_owners(records) if records is not None else 0


_GUARD = (
    "import sys\nsys.path.insert(0, sys.argv[1])\nfrom monkey.children import guard\nguard(sys.argv[2], sys.argv[3])\n"
)


def _ensure_guardian() -> None:
    """Start the guardian once, when the first child starts (Linux with records only)."""
    global _guardian, _guard_pipe
    if _guardian is not None and _guardian.poll() is None or not _LINUX:
        return
    read, write = os.pipe()
    record = str(_records / f"{_owner_id()}.json") if _records is not None else ""
    root = str(Path(__file__).resolve().parent.parent)
    try:
        _guardian = subprocess.Popen(
            [sys.executable, "-S", "-c", _GUARD, root, _owner_id(), record],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", "")},
        )
    except OSError:
        os.close(write)
        return
    finally:
        os.close(read)
    if _guard_pipe is not None:
        os.close(_guard_pipe)
    _guard_pipe = write
    for path in _marks:
        _send_mark(path)


def _send_mark(path: str) -> None:
    if _guard_pipe is None:
        return
    with contextlib.suppress(OSError):
        os.write(_guard_pipe, os.fsencode(path) + b"\n")


def mark_on_death(path: Path) -> None:
    """Have the guardian set ``path``'s times to the moment this monkey's children were all
    killed, once monkey is gone (an existing file; nothing is created). Until then the
    guardian holds ``path.guard`` locked; see :func:`death_mark`."""
    if not _LINUX:
        return
    _marks.append(str(path))
    _send_mark(str(path))


def death_mark(path: Path, *, wait: float = 10.0) -> float | None:
    """When the children of a dead monkey were gone, from the file it named in
    :func:`mark_on_death` (its modification time); waits up to ``wait`` seconds for a guardian
    still at work. ``None`` when no guardian marked it (the file's time is then only what
    the dead monkey last wrote there)."""
    guard_path = Path(f"{path}.guard")
    try:
        fd = os.open(guard_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.05)
        if os.fstat(fd).st_size == 0:  # the guardian never finished (it was killed too)
            return None
        return os.stat(path).st_mtime
    except OSError:
        return None
    finally:
        os.close(fd)


def guard(owner: str, record: str) -> None:
    """The guardian's body: wait until monkey is gone, then kill what carries its tag and
    mark the files monkey named (see :func:`mark_on_death`)."""
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    held: dict[str, int] = {}
    pending = b""
    while chunk := os.read(0, 4096):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            path = os.fsdecode(line)
            if path and path not in held:
                with contextlib.suppress(OSError):
                    fd = os.open(f"{path}.guard", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    held[path] = fd
    data: dict = {"owner": owner, "children": []}
    if record:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(Path(record).read_text())
    for _ in range(3):  # a stray forking while it is killed leaves a child behind: look again
        if not _clean(data):
            break
    if record:
        with contextlib.suppress(OSError):
            os.unlink(record)
    for path, fd in held.items():  # every child is dead now: that moment, then let a repair read it
        with contextlib.suppress(OSError):
            os.utime(path)
            os.write(fd, b"marked\n")
        os.close(fd)
