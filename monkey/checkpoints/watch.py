"""Who wrote what while a shell command ran: fanotify plus the kernel's process events (Linux).

A whole-tree snapshot before and after a command tells *what* changed, not *who* changed it:
a person saving a file in an editor, another program or another monkey writing in the
same workspace during the command would look like the command's work. Where the platform
can say who wrote, :class:`WriteWatch` records it:

- a fanotify listener on the workspace's filesystem reports every create, delete, rename,
  write and attribute change with the writer's pid and the folder handle + name it touched;
- the process connector (netlink) reports every fork, so the processes this monkey starts
  (the command and everything it starts) are known even when they have already exited by
  the time their write is read.

A write by this monkey process or one of its descendants is the command's; a write by a
live process that is not is someone else's; a write by a process that ended before monkey
could see whose it was is unknown. Both need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); when
either is missing, :func:`start` returns None and the guard falls back to time windows.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import select
import socket
import struct
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["WriteWatch", "start", "DISABLE_ENV"]

DISABLE_ENV = "MONKEY_NO_WRITE_WATCH"
"""Set to 1 to use time windows only (tests of the fallback; systems where fanotify misbehaves)."""

_FAN_CLOEXEC, _FAN_NONBLOCK, _FAN_UNLIMITED_QUEUE = 0x1, 0x2, 0x10
_FAN_REPORT_DIR_FID, _FAN_REPORT_NAME = 0x400, 0x800
_FAN_MARK_ADD, _FAN_MARK_FILESYSTEM = 0x1, 0x100
_FAN_MODIFY, _FAN_ATTRIB, _FAN_CLOSE_WRITE = 0x2, 0x4, 0x8
_FAN_MOVED_FROM, _FAN_MOVED_TO, _FAN_CREATE, _FAN_DELETE = 0x40, 0x80, 0x100, 0x200
_FAN_Q_OVERFLOW, _FAN_ONDIR = 0x4000, 0x40000000
_MASK = (_FAN_MODIFY | _FAN_ATTRIB | _FAN_CLOSE_WRITE | _FAN_MOVED_FROM | _FAN_MOVED_TO | _FAN_CREATE
         | _FAN_DELETE | _FAN_ONDIR)
_INFO_DFID_NAME = 2
_AT_FDCWD = -100
_META = struct.Struct("=IBBHQii")
_NETLINK_CONNECTOR, _CN_IDX_PROC, _CN_VAL_PROC, _PROC_CN_MCAST_LISTEN = 11, 1, 1, 1
_PROC_EVENT_FORK = 0x1

OURS, FOREIGN, UNKNOWN = "ours", "foreign", "unknown"


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        libc.name_to_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def handle_of(path: Path) -> bytes | None:
    """The file handle of a folder as fanotify reports it (type + bytes), or None."""
    libc = _libc()
    if libc is None:
        return None
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("=Ii", buf, 0, 128, 0)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(_AT_FDCWD, os.fsencode(path), buf, ctypes.byref(mount_id), 0) != 0:
        return None
    size, kind = struct.unpack_from("=Ii", buf, 0)
    return struct.pack("=i", kind) + buf.raw[8:8 + size]


class WriteWatch:
    """Writes seen on the workspace's filesystem while a command runs, with their writers."""

    def __init__(self, fan_fd: int, sock: socket.socket) -> None:
        self._fan = fan_fd
        self._sock = sock
        self._root = os.getpid()
        self._tree: set[int] = {self._root}
        self._verdicts: dict[int, str] = {}
        self._who: dict[int, str] = {}
        self.seen: dict[tuple[bytes, bytes], set[int]] = {}
        """(folder handle, name) -> the pids that wrote there."""
        self.overflowed = False
        self._stopped = False
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="monkey-write-watch", daemon=True)
        self._thread.start()

    # -- reading --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._fan, self._sock, self._stop_r], [], [])
                self._drain_forks()
                if self._fan in ready:
                    self._read_events()
                if self._stop_r in ready:
                    self._drain_forks()
                    self._read_events()
                    return
        except OSError:
            self.overflowed = True  # cannot tell any more: everything is unsure

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
                        if parent in self._tree:
                            self._tree.add(child)
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
                    self.overflowed = True
                info = offset + meta_len
                while info + 4 <= offset + length:
                    kind, _, size = struct.unpack_from("=BBH", data, info)
                    if size == 0:
                        break
                    if kind == _INFO_DFID_NAME:
                        hsize, htype = struct.unpack_from("=Ii", data, info + 4 + 8)
                        start = info + 4 + 8 + 8
                        handle = struct.pack("=i", htype) + data[start:start + hsize]
                        name = data[start + hsize:info + size].split(b"\x00", 1)[0]
                        self.seen.setdefault((handle, name), set()).add(pid)
                        self._verdict(pid)
                    info += size
                offset += max(length, _META.size)

    def _verdict(self, pid: int) -> str:
        """Decided while the event is read: a live writer's ancestry, or the forks seen."""
        known = self._verdicts.get(pid)
        if known is not None:
            return known
        if pid not in self._tree:
            self._drain_forks()  # a fork queued after the last drain
        verdict, chain, current = FOREIGN, [], pid
        while current > 1 and len(chain) < 64:
            if current in self._tree:
                verdict = OURS
                break
            chain.append(current)
            parent = _parent(current)
            if parent is None:
                verdict = UNKNOWN if current == pid else FOREIGN
                break
            current = parent
        if verdict == OURS:
            self._tree.update(chain)
        elif verdict == FOREIGN:
            self._who[pid] = _name(pid)
        self._verdicts[pid] = verdict
        return verdict

    # -- answers --------------------------------------------------------------------

    def stop(self) -> None:
        """Stop listening (every event queued so far is read first)."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            os.write(self._stop_w, b"x")
            self._thread.join(timeout=10)
        for fd in (self._fan, self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._sock.close()

    def why_not_ours(self, workspace: Path, rel: str) -> str:
        """"" when every write seen to ``rel`` was the command's, else why monkey cannot be sure."""
        if self.overflowed:
            return "too many writes happened at once for monkey to see whose they were"
        parts = rel.rstrip("/").split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the path, else the nearest folder still there
            folder = workspace.joinpath(*parts[:depth])
            handle = handle_of(folder)
            if handle is None:
                continue
            pids = self.seen.get((handle, os.fsencode(parts[depth])))
            if not pids:
                return "no write to it by the command was seen"
            return self._describe(pids)
        return "no write to it by the command was seen"

    def _describe(self, pids: Iterable[int]) -> str:
        foreign = sorted(p for p in pids if self._verdicts.get(p) == FOREIGN)
        if foreign:
            who = ", ".join(f"pid {p}" + (f" ({self._who[p]})" if self._who.get(p) else "") for p in foreign[:3])
            return f"written by another program ({who}) while the command ran"
        if any(self._verdicts.get(p) == UNKNOWN for p in pids):
            return "written by a process that had ended before monkey could see whose it was"
        return ""


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return int(data[data.rindex(b")") + 2:].split()[1])


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def start(workspace: Path) -> WriteWatch | None:
    """A watch on the workspace's filesystem, or None where the platform cannot give one."""
    if os.environ.get(DISABLE_ENV) == "1" or not hasattr(socket, "AF_NETLINK"):
        return None
    libc = _libc()
    if libc is None or not hasattr(libc, "fanotify_init"):
        return None
    flags = _FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_UNLIMITED_QUEUE | _FAN_REPORT_DIR_FID | _FAN_REPORT_NAME
    fan = libc.fanotify_init(flags, os.O_RDONLY)
    if fan < 0:
        return None
    try:
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
        return None
    return WriteWatch(fan, sock)
