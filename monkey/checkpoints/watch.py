"""Who wrote what in the workspace: fanotify plus the kernel's process events (Linux).

A whole-tree snapshot before and after a command tells *what* changed, not *who* changed it:
a person saving a file in an editor, another program or another monkey writing in the
same workspace during the command would look like the command's work. Where the platform
can say who wrote, :class:`WriteWatch` records it:

- a fanotify listener on the workspace's filesystem reports every create, delete, rename,
  write and attribute change with the writer's pid and the folder handle + name it touched;
  the folder is named as a workspace path when the event is read (events elsewhere on the
  filesystem are dropped);
- the process connector (netlink) reports every fork, so the processes this monkey starts
  (the command and everything it starts) are known even when they have already exited by
  the time their write is read.

A write by a process the command started (its pid handed to :meth:`Window.claim` when it was
spawned) or one of their descendants is the command's; a write by another command's process
tree (two commands at once in one monkey: two sub-agents, two sessions of ``monkey serve`` or
ACP) is that command's and not this one's; a write by monkey itself or a descendant no command
claimed is monkey's, not the command's (a window nothing was claimed in counts every descendant
of monkey as the command's, as before claims existed); a write by a live process that is not
monkey's is someone else's; a write by a process that ended before monkey could see whose it
was is unknown. Both need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); when
either is missing, :func:`start` returns None and the guard falls back to time windows.

A watch lives as long as its guard: every write is numbered, :meth:`WriteWatch.sync` says
how far the writes go so far, :meth:`WriteWatch.changes` which paths were written between
two numbers (what keeps ``live.LiveTree`` current) and a :class:`Window` (one command's
numbers) whose they were.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import socket
import struct
import threading
from collections.abc import Iterable
from pathlib import Path

from monkey.checkpoints.handles import handle_of, libc_handle, link_count, open_handle
from monkey.children import name_of, parent_of

__all__ = ["WriteWatch", "Window", "start", "missing", "DISABLE_ENV", "MAX_RECORDS", "FORGOTTEN", "LINKED_OUTSIDE"]

DISABLE_ENV = "MONKEY_NO_WRITE_WATCH"
"""Set to 1 to use time windows only (tests of the fallback; systems where fanotify misbehaves)."""

_FAN_CLOEXEC, _FAN_NONBLOCK, _FAN_UNLIMITED_QUEUE = 0x1, 0x2, 0x10
_FAN_REPORT_DIR_FID, _FAN_REPORT_NAME = 0x400, 0x800
_FAN_MARK_ADD, _FAN_MARK_FILESYSTEM = 0x1, 0x100
_FAN_MODIFY, _FAN_ATTRIB, _FAN_CLOSE_WRITE = 0x2, 0x4, 0x8
_FAN_MOVED_FROM, _FAN_MOVED_TO, _FAN_CREATE, _FAN_DELETE = 0x40, 0x80, 0x100, 0x200
_FAN_Q_OVERFLOW, _FAN_ONDIR = 0x4000, 0x40000000
_MASK = (
    _FAN_MODIFY
    | _FAN_ATTRIB
    | _FAN_CLOSE_WRITE
    | _FAN_MOVED_FROM
    | _FAN_MOVED_TO
    | _FAN_CREATE
    | _FAN_DELETE
    | _FAN_ONDIR
)
_DIR_CHANGE = _FAN_CREATE | _FAN_DELETE | _FAN_MOVED_FROM | _FAN_MOVED_TO
_WRITE = _FAN_MODIFY | _FAN_CLOSE_WRITE | _FAN_ATTRIB
_INFO_DFID_NAME = 2
_AT_FDCWD = -100
_META = struct.Struct("=IBBHQii")
_NETLINK_CONNECTOR, _CN_IDX_PROC, _CN_VAL_PROC, _PROC_CN_MCAST_LISTEN = 11, 1, 1, 1
_PROC_EVENT_FORK = 0x1

OURS, FOREIGN, UNKNOWN = "ours", "foreign", "unknown"
OTHER, MONKEY = "other", "monkey"
"""Verdicts a window gives a write of monkey's tree: another claimed command's; monkey's own,
not a command's."""

FORGOTTEN = "writes forgotten (a queue overflow or too many writes)"
LINKED_OUTSIDE = "a file with several hard links was written outside the workspace"
"""Why the writes between two numbers are not all known (:meth:`WriteWatch.changes`): another
process on the same filesystem can cause either."""

MAX_RECORDS = 200_000
"""Writes in the workspace kept at most; past that the oldest are forgotten (and whatever
needed them falls back: a full snapshot, "too many writes")."""
_MAX_FOLDERS = 20_000
"""Folder handles whose names are kept."""


class WriteWatch:
    """Writes seen in the workspace since the watch started, numbered, with their writers."""

    def __init__(self, fan_fd: int, sock: socket.socket, workspace: Path, mount_fd: int) -> None:
        self._fan = fan_fd
        self._sock = sock
        self._mount = mount_fd
        self.workspace = str(workspace)
        self._root = os.getpid()
        self._parents: dict[int, int] = {self._root: 0}
        """monkey and its descendants seen: each one's parent (monkey's: 0)."""
        self._verdicts: dict[int, tuple[str, tuple[int, ...]]] = {}
        self._claims: dict[int, int] = {}
        """Pids a command's window claimed (the processes it started): the window's key."""
        self._scoped: dict[int, list[int]] = {}
        """Pids whose children (not themselves) a window claimed while it is open (an agent's own command)."""
        self._spans: dict[int, tuple[int, int]] = {}
        """Each window's numbers, from its first write to after its last (an open one's: to the end)."""
        self._opened = 0
        """Windows opened so far (each one's key: never reused, unlike an object's id)."""
        self._who: dict[int, str] = {}
        self._lock = threading.RLock()
        self._records: list[_Record] = []
        """(workspace path, fanotify mask, pid, verdict, the writer's ancestry up to monkey) of each
        write, in order."""
        self._first = 0
        """The number of ``_records[0]``."""
        self.horizon = 0
        """Writes numbered below this were forgotten (a queue overflow, too many writes)."""
        self._linked: list[int] = []
        """Numbers at which a file with several hard links was written outside the workspace."""
        self._single: set[tuple[bytes, bytes]] = set()
        self._suspects: dict[tuple[bytes, bytes], int] = {}
        self._folders: dict[bytes, str | None] = {}
        self._windows: dict[int, int] = {}
        self._stopped = False
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="monkey-write-watch", daemon=True)
        self._thread.start()

    @property
    def seq(self) -> int:
        """The number the next write will get."""
        return self._first + len(self._records)

    # -- reading --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._fan, self._sock.fileno(), self._stop_r], [], [])
                with self._lock:
                    self._drain_forks()
                    if self._fan in ready or self._stop_r in ready:
                        self._read_events()
                if self._stop_r in ready:
                    return
        except (OSError, ValueError):
            with self._lock:
                self._forget()  # cannot tell any more: everything is unsure

    def _forget(self) -> None:
        self._first += len(self._records)
        self._records.clear()
        self.horizon = self._first

    def _drain_forks(self) -> None:
        while True:
            try:
                data = self._sock.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            offset = 0
            while offset + 16 <= len(data):
                length = struct.unpack_from("=I", data, offset)[0]
                body = offset + 16 + 20  # nlmsghdr, cn_msg
                if len(data) >= body + 32:
                    what = struct.unpack_from("=I", data, body)[0]
                    if what == _PROC_EVENT_FORK:
                        _, parent, _, child = struct.unpack_from("=4I", data, body + 16)
                        if parent in self._parents:
                            self._parents[child] = parent
                offset += max(length, 16)
                offset = (offset + 3) & ~3

    def _read_events(self) -> None:
        while True:
            try:
                data = os.read(self._fan, 65536)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            offset = 0
            while offset + _META.size <= len(data):
                length, _, _, meta_len, mask, fd, pid = _META.unpack_from(data, offset)
                if fd >= 0:
                    os.close(fd)
                if mask & _FAN_Q_OVERFLOW:
                    self._forget()
                info = offset + meta_len
                while info + 4 <= offset + length:
                    kind, _, size = struct.unpack_from("=BBH", data, info)
                    if size == 0:
                        break
                    if kind == _INFO_DFID_NAME:
                        hsize, htype = struct.unpack_from("=Ii", data, info + 4 + 8)
                        start = info + 4 + 8 + 8
                        handle = struct.pack("=i", htype) + data[start : start + hsize]
                        name = data[start + hsize : info + size].split(b"\x00", 1)[0]
                        self._event(handle, name, mask, pid)
                    info += size
                offset += max(length, _META.size)
            if len(self._records) > MAX_RECORDS:
                self._forget()

    def _event(self, handle: bytes, name: bytes, mask: int, pid: int) -> None:
        if mask & _FAN_ONDIR and mask & (_FAN_DELETE | _FAN_MOVED_FROM | _FAN_MOVED_TO):
            self._folders.clear()  # folders moved or gone: their names are looked up again
        folder = self._folder(handle)
        if folder is None:
            if mask & _WRITE and not mask & _FAN_ONDIR:
                self._outside_write(handle, name)
            return
        if name == b".":
            return  # a folder's own attributes: nothing a snapshot holds
        rel = f"{folder}/{os.fsdecode(name)}" if folder else os.fsdecode(name)
        verdict, chain = self._verdict(pid) if self._windows else ("", ())
        self._records.append((rel, mask, pid, verdict, chain))

    def _folder(self, handle: bytes) -> str | None:
        """The workspace path of a folder handle ("" the root), None outside it or gone."""
        if handle in self._folders:
            return self._folders[handle]
        rel: str | None = None
        try:
            fd = open_handle(self._mount, handle)
        except OSError:
            return None  # gone: its removal is an event of the folder above it
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        finally:
            os.close(fd)
        if path == self.workspace:
            rel = ""
        elif path.startswith(self.workspace + "/") and not path.endswith(" (deleted)"):
            rel = path[len(self.workspace) + 1 :]
        if len(self._folders) > _MAX_FOLDERS:
            self._folders.clear()
        self._folders[handle] = rel
        return rel

    def _outside_write(self, handle: bytes, name: bytes) -> None:
        """A file written outside the workspace may be a hard link of one inside it, whose
        content then changed with no event of its own: one with several links is a suspect,
        looked at again at the next :meth:`sync` (a file that was only linked for a moment,
        as git links its objects into place, is gone by then)."""
        key = (handle, name)
        if key in self._single or key in self._suspects:
            return
        links = link_count(self._mount, handle, name)
        if links > 1:
            self._suspects[key] = self.seq
        elif links == 1 and len(self._single) < _MAX_FOLDERS:
            self._single.add(key)

    def _judge_suspects(self) -> None:
        for (handle, name), seq in self._suspects.items():
            if link_count(self._mount, handle, name) > 1:
                self._linked.append(seq)
        self._suspects.clear()

    def _verdict(self, pid: int) -> tuple[str, tuple[int, ...]]:
        """Decided while the event is read: a live writer's ancestry, or the forks seen; for
        monkey's own tree, the pids from the writer up to monkey (whose command it was is
        decided when a window closes, from the pids the commands claimed)."""
        known = self._verdicts.get(pid)
        if known is not None:
            return known
        if pid not in self._parents:
            self._drain_forks()  # a fork queued after the last drain
        chain: list[int] = []
        verdict, current = FOREIGN, pid
        while current > 1 and len(chain) < 64:
            if current in self._parents:
                verdict = OURS
                break
            chain.append(current)
            parent = parent_of(current)
            if parent is None:
                verdict = UNKNOWN if current == pid else FOREIGN
                break
            current = parent
        ancestry: tuple[int, ...] = ()
        if verdict == OURS:
            for child, parent in zip(chain, chain[1:] + [current], strict=False):  # chain may be empty
                self._parents[child] = parent
            up = chain[:]
            while current and len(up) < 128:
                up.append(current)
                current = self._parents.get(current, 0)
            ancestry = tuple(up)
        elif verdict == FOREIGN:
            self._who[pid] = name_of(pid)
        self._verdicts[pid] = (verdict, ancestry)
        return verdict, ancestry

    # -- answers --------------------------------------------------------------------

    def sync(self) -> int:
        """Read every event queued so far; returns the number the next write will get (every
        write that had returned before this call has a smaller one)."""
        with self._lock:
            if not self._stopped:
                try:
                    self._drain_forks()
                    self._read_events()
                except (OSError, ValueError):
                    self._forget()
                self._judge_suspects()
            return self.seq

    def open(self) -> Window:
        """A window on the writes from now on (one command's), closed by :meth:`Window.close`."""
        with self._lock:
            if not self._windows:  # pids seen before may have been reused since
                self._parents = {self._root: 0}
                self._verdicts.clear()
                self._who.clear()
                self._claims.clear()
                self._scoped.clear()
                self._spans.clear()
            start = self.sync()
            self._opened += 1
            window = Window(self, start, self._opened)
            self._spans[window.key] = (start, 1 << 62)
            self._windows[id(window)] = start
            return window

    def _claim(self, window: Window, pid: int, children: bool = False) -> None:
        with self._lock:
            if children:  # a live process started before: its forks from now on are known to be monkey's
                self._scoped.setdefault(pid, []).append(window.key)
                chain = [pid]
                while chain[-1] not in self._parents and len(chain) < 64:
                    parent = parent_of(chain[-1])
                    if parent is None or parent <= 1:
                        return
                    chain.append(parent)
                if chain[-1] in self._parents:
                    self._parents.update(zip(chain, chain[1:], strict=False))
            else:
                self._claims[pid] = window.key

    def _owner(self, chain: tuple[int, ...], seq: int) -> int | None:
        """The window whose command wrote write ``seq``: the nearest claim up the writer's chain (one of a
        process's children holds for its children, not itself, while its window is open)."""
        for i, pid in enumerate(chain):
            scoped = [k for k in self._scoped.get(pid, ()) if i and self._spans[k][0] <= seq < self._spans[k][1]]
            if scoped or pid in self._claims:
                return max(scoped) if scoped else self._claims[pid]
        return None

    def _close(self, window: Window) -> list[tuple[str, int, int, str]]:
        """The window's writes, each with its verdict for this window."""
        with self._lock:
            end = self.sync()
            self._windows.pop(id(window), None)
            window.end = end
            window.lost = window.start < self.horizon
            self._spans[window.key] = (window.start, end)
            mine = {pid for pid, owner in self._claims.items() if owner == window.key} | {
                pid for pid, keys in self._scoped.items() if window.key in keys
            }
            out = []
            first = max(window.start - self._first, 0)
            for n, (rel, mask, pid, verdict, chain) in enumerate(self._records[first : end - self._first]):
                if verdict == OURS:
                    owner = self._owner(chain, first + self._first + n)
                    if owner is not None and owner != window.key:
                        verdict = OTHER
                    elif owner is None and mine:
                        verdict = MONKEY
                out.append((rel, mask, pid, verdict))
            return out

    def changes(self, start: int, end: int) -> tuple[set[str], set[str]] | str:
        """The files and the folders written (created, removed, moved) from ``start`` up to
        ``end``, or why monkey cannot know them all (writes forgotten, a hard link)."""
        with self._lock:
            if start < max(self.horizon, self._first):
                return FORGOTTEN
            if any(start <= n <= end for n in self._linked):
                return LINKED_OUTSIDE
            files: set[str] = set()
            folders: set[str] = set()
            for rel, mask, _, _, _ in self._records[start - self._first : end - self._first]:
                if mask & _FAN_ONDIR:
                    if mask & _DIR_CHANGE:
                        folders.add(rel)
                else:
                    files.add(rel)
            return files, folders

    def trim(self, keep: int) -> None:
        """Forget the writes numbered below ``keep`` (and below every open window)."""
        with self._lock:
            keep = min([keep, *self._windows.values()])
            drop = keep - self._first
            if drop > 0:
                del self._records[:drop]
                self._first = keep
            self._linked = [n for n in self._linked if n >= keep]

    def forget_links(self) -> None:
        """Look again at every file written outside (after a full snapshot: links may be new)."""
        with self._lock:
            self._single.clear()
            self._suspects.clear()

    def stop(self) -> None:
        """Stop listening (every event queued so far is read first)."""
        if self._stopped:
            return
        if self._thread.is_alive():
            os.write(self._stop_w, b"x")
            self._thread.join(timeout=10)
        with self._lock:
            self._stopped = True
            for fd in (self._fan, self._stop_r, self._stop_w, self._mount):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._sock.close()


_Record = tuple[str, int, int, str, tuple[int, ...]]


class Window:
    """The writes of one command's time: from :meth:`WriteWatch.open` to :meth:`close`."""

    def __init__(self, watch: WriteWatch, start: int, key: int = 0) -> None:
        self.watch = watch
        self.key = key
        """Which window this is (what its claims are kept under)."""
        self.start = start
        """The number of the first write in the window."""
        self.end: int | None = None
        """The number after the last one (set by :meth:`close`)."""
        self.lost = False
        """Some writes of the window were forgotten: nothing in it can be told apart."""
        self._records: list[tuple[str, int, int, str]] = []
        self._paths: dict[str, set[tuple[int, str]]] = {}
        self._folders: dict[str, set[tuple[int, str]]] = {}
        self._others = False

    def claim(self, pid: int, *, children: bool = False) -> None:
        """A process the command started: its writes and its descendants' are the command's (``children``:
        only its descendants', while this window is open: an agent that runs the command itself)."""
        self.watch._claim(self, pid, children)

    def close(self) -> None:
        """Read the writes so far and end the window (once)."""
        if self.end is not None:
            return
        self._records = self.watch._close(self)
        for rel, mask, pid, verdict in self._records:
            (self._folders if mask & _FAN_ONDIR else self._paths).setdefault(rel, set()).add((pid, verdict))
            self._others = self._others or verdict not in (OURS, OTHER)

    def first_change_under(self, folder: str) -> str:
        """The first path written below ``folder`` (its own ``.git`` aside), relative to it; ""."""
        prefix = folder.rstrip("/") + "/"
        for rel, _, _, _ in self._records:
            if rel.startswith(prefix) and not rel.startswith(prefix + ".git/") and rel != prefix + ".git":
                return rel[len(prefix) :]
        return ""

    def why_not_ours(self, workspace: Path, rel: str) -> str:
        """ "" when every write seen to ``rel`` was the command's, else why monkey cannot be sure.

        A path with no write of its own (a file inside a folder the command moved) is judged
        by the folder's move, and only when nobody else wrote in the workspace meanwhile.
        """
        if self.lost:
            return "too many writes happened at once for monkey to see whose they were"
        rel = rel.rstrip("/")
        own = self._paths.get(rel, set()) | self._folders.get(rel, set())
        if own:
            return self._describe(own)
        parts = rel.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            moved = self._folders.get("/".join(parts[:depth]))
            if not moved:
                continue
            why = self._describe(moved)
            if not why and self._others:
                return (
                    "its folder was moved or made by the command while another program wrote in the "
                    "workspace, so monkey cannot tell whose its content is"
                )
            return why
        return "no write to it by the command was seen"

    def others_only(self, rel: str) -> bool:
        """Whether every write seen to ``rel`` (or, with none of its own, to the folder above it
        that was moved or made) was another command's of this monkey: the change is that
        command's, recorded in its own checkpoint, and none of this one's."""
        if self.lost:
            return False
        parts = rel.rstrip("/").split("/")
        for depth in range(len(parts), 0, -1):
            key = "/".join(parts[:depth])
            writes = (self._paths.get(key, set()) if depth == len(parts) else set()) | self._folders.get(key, set())
            if writes:
                return all(verdict == OTHER for _, verdict in writes)
        return False

    def _describe(self, writes: Iterable[tuple[int, str]]) -> str:
        writes = list(writes)
        foreign = sorted({pid for pid, verdict in writes if verdict == FOREIGN})
        if foreign:
            who = ", ".join(
                f"pid {p}" + (f" ({self.watch._who[p]})" if self.watch._who.get(p) else "") for p in foreign[:3]
            )
            return f"written by another program ({who}) while the command ran"
        if any(verdict == OTHER for _, verdict in writes):
            return "written by another command monkey ran at the same time too"
        if any(verdict == MONKEY for _, verdict in writes):
            return "written by monkey itself (or a process no command started) while the command ran"
        if any(verdict != OURS for _, verdict in writes):
            return "written by a process that had ended before monkey could see whose it was"
        return ""


def start(workspace: Path) -> WriteWatch | None:
    """A watch on the workspace's filesystem, or None where the platform cannot give one."""
    if os.environ.get(DISABLE_ENV) == "1" or not hasattr(socket, "AF_NETLINK"):
        return None
    libc = libc_handle()
    if libc is None or not hasattr(libc, "fanotify_init"):
        return None
    flags = _FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_UNLIMITED_QUEUE | _FAN_REPORT_DIR_FID | _FAN_REPORT_NAME
    fan = libc.fanotify_init(flags, os.O_RDONLY)
    if fan < 0:
        return None
    mount = -1
    try:
        mount = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        own = handle_of(workspace)
        if own is None:
            raise OSError("no file handle for the workspace")
        os.close(open_handle(mount, own))  # folder handles can be named (CAP_DAC_READ_SEARCH)
        if libc.fanotify_mark(fan, _FAN_MARK_ADD | _FAN_MARK_FILESYSTEM, _MASK, _AT_FDCWD, os.fsencode(workspace)) != 0:
            raise OSError(ctypes.get_errno(), "fanotify_mark")
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_CONNECTOR)
        try:
            sock.bind((0, _CN_IDX_PROC))
            payload = struct.pack("=I", _PROC_CN_MCAST_LISTEN)
            cn = struct.pack("=IIIIHH", _CN_IDX_PROC, _CN_VAL_PROC, 0, 0, len(payload), 0) + payload
            sock.send(struct.pack("=IHHII", 16 + len(cn), 3, 0, 0, 0) + cn)
        except OSError:
            sock.close()
            raise
    except OSError:
        os.close(fan)
        if mount >= 0:
            os.close(mount)
        return None
    return WriteWatch(fan, sock, workspace, mount)


def missing(workspace: Path) -> str:
    """Why no watch can run on the workspace ("" when one can): a watch is started and stopped."""
    if os.environ.get(DISABLE_ENV) == "1":
        return f"{DISABLE_ENV} is set"
    watch = start(workspace)
    if watch is not None:
        watch.stop()
        return ""
    return "it needs Linux and root: fanotify and the kernel's process events"
