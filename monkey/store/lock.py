"""Who owns a session: an OS lock, not a process id.

A session is open while a process holds an exclusive ``flock`` on its lock file
(``session-locks/ID.lock`` next to the database, in the monkey home). The kernel releases
the lock when the process dies, however it dies, so a killed owner frees the session at
once, and neither a zombie nor a reused pid can keep it. The file is removed by whoever
holds the lock when letting go (the owner on release, or a later process that finds it
free); a process that locked a file which was removed meanwhile tries again, so two
processes can never both believe they own one session.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["SessionLock", "lock_folder", "locked_since", "session_locked", "lock_owner"]


def lock_folder(database: Path) -> Path:
    """The folder of the session lock files for the database ``database``."""
    return database.parent / "session-locks"


def _path(folder: Path, session_id: str) -> Path:
    return folder / f"{session_id}.lock"


def _lock(path: Path, *, create: bool) -> int | None:
    """An fd holding the exclusive lock on ``path``; None when another holds it (or, without
    ``create``, when there is no such file)."""
    while True:
        try:
            flags = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY
            fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            if create:
                raise
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # removed (and maybe made again) by its last owner: start over
        if not create:
            return None


class SessionLock:
    """The lock that makes this process the owner of one session."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, folder: Path, session_id: str) -> SessionLock | None:
        """Own ``session_id``; None when another process (or another handle here) owns it.

        Raises ``OSError`` when the lock file cannot be made (a read-only home).
        """
        folder.mkdir(parents=True, exist_ok=True)
        path = _path(folder, session_id)
        fd = _lock(path, create=True)
        if fd is None:
            return None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())  # for a person looking; the lock is what counts
        return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let go of the session (the file goes first, while the lock is still held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)


def session_locked(folder: Path, session_id: str) -> bool:
    """Whether some process owns ``session_id`` now. A lock file left by a dead owner is removed."""
    path = _path(folder, session_id)
    try:
        fd = _lock(path, create=False)
    except OSError:
        return False
    if fd is None:
        return path.exists()
    try:
        os.unlink(path)  # nobody owns it: a dead owner's file
    except OSError:
        pass
    os.close(fd)
    return False


def lock_owner(folder: Path, session_id: str) -> int:
    """The pid the owner of ``session_id`` wrote in its lock file (0 when unknown); for messages only."""
    try:
        return int(_path(folder, session_id).read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def locked_since(folder: Path, session_id: str) -> float:
    """When the owner of ``session_id`` took it (its lock file written, seconds since the epoch); 0 when unknown."""
    try:
        return _path(folder, session_id).stat().st_mtime
    except OSError:
        return 0.0
