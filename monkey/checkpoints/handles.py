"""Folder handles as fanotify reports them (Linux): naming one, opening one, a file's link count in one.

The write watch (:mod:`monkey.checkpoints.watch`) names the folder of each write by its handle.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import stat
import struct
from pathlib import Path

__all__ = ["handle_of", "libc_handle", "link_count", "open_handle"]

_AT_FDCWD = -100


@functools.lru_cache(maxsize=1)
def libc_handle() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        libc.name_to_handle_at.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_int,
        ]
        libc.open_by_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def handle_of(path: Path) -> bytes | None:
    """The file handle of a folder as fanotify reports it (type + bytes), or None."""
    libc = libc_handle()
    if libc is None:
        return None
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("=Ii", buf, 0, 128, 0)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(_AT_FDCWD, os.fsencode(path), buf, ctypes.byref(mount_id), 0) != 0:
        return None
    size, kind = struct.unpack_from("=Ii", buf, 0)
    return struct.pack("=i", kind) + buf.raw[8 : 8 + size]


def open_handle(mount_fd: int, handle: bytes) -> int:
    """An O_PATH descriptor of the folder a handle names (OSError when it is gone)."""
    libc = libc_handle()
    if libc is None:
        raise OSError("no libc")
    raw = struct.pack("=Ii", len(handle) - 4, struct.unpack_from("=i", handle)[0]) + handle[4:]
    fd = libc.open_by_handle_at(mount_fd, raw, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def link_count(mount_fd: int, handle: bytes, name: bytes) -> int:
    """How many names the regular file ``name`` in a folder has (0: gone, or not a file)."""
    try:
        fd = open_handle(mount_fd, handle)
    except OSError:
        return 0
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return 0
    finally:
        os.close(fd)
    return st.st_nlink if stat.S_ISREG(st.st_mode) else 0
