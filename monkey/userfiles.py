"""The person's own files in the monkey home (config, trusted folders, pins): changed whole, one writer at a time.

:func:`locked` holds an advisory ``fcntl`` lock (on a ``.NAME.lock`` file beside ``path``) for a
whole read-modify-write, so two monkeys approving or revoking at once never lose each other's
change nor bring back what the other removed; :func:`write_atomic` writes a temporary file in
the same folder, syncs it, renames it over ``path`` and syncs the folder, so a crash leaves the
old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["locked", "toml_document", "write_atomic"]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of ``path`` (blocking) while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor lets the lock go


def toml_document(path: Path) -> Any:
    """``path`` read with ``tomlkit`` (comments and order kept; an empty document when there is no
    file). Raises ``OSError`` when it is not valid TOML."""
    import tomlkit

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # noqa: BLE001 - tomlkit raises its own ParseError family
        raise OSError(f"cannot update {path}: it is not valid TOML ({exc})") from None


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8): temporary file, fsync, rename, fsync of the folder.
    The file keeps the person's mode, or gets ``mode`` (a key's file: 0600, never readable by others
    at any moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            with contextlib.suppress(OSError):
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)  # keep the person's mode on the file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        dirfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)
