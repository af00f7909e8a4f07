"""Small file helpers shared by the file tools: binary sniffing, atomic writes, diffs.

Text is read with ``surrogateescape`` where it will be written back, so bytes that are
not valid UTF-8 survive an edit unchanged; :func:`printable` turns such text into
something safe to show.
"""

from __future__ import annotations

import difflib
import os
import secrets
import stat
from pathlib import Path

from monkey.safe_text import printable  # re-exported: files are shown with it

__all__ = [
    "SNIFF_BYTES",
    "BIG_FILE",
    "looks_binary",
    "read_exact",
    "printable",
    "count_lines",
    "describe_size",
    "unified_diff",
    "atomic_write",
]

SNIFF_BYTES = 8192
"""How much of a file's start is looked at to decide whether it is binary."""
BIG_FILE = 1 << 20
"""Files at least this large are read and written in a worker thread."""


def looks_binary(head: bytes) -> bool:
    """Whether data looks binary: a NUL byte in its first :data:`SNIFF_BYTES`."""
    return b"\x00" in head[:SNIFF_BYTES]


def read_exact(path: Path) -> tuple[bytes, str]:
    """A file's bytes and its text, lossless (undecodable bytes become surrogates)."""
    data = path.read_bytes()
    return data, data.decode("utf-8", errors="surrogateescape")


def count_lines(text: str) -> int:
    """Lines in a text, counting a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def describe_size(text: str, data: bytes) -> str:
    """``"3 lines, 42 bytes"`` (singulars where they fit)."""
    lines = count_lines(text)
    return f"{lines} line{'' if lines == 1 else 's'}, {len(data)} byte{'' if len(data) == 1 else 's'}"


def unified_diff(rel: str, old: str, new: str) -> str:
    """A unified diff of one file with ``a/rel`` and ``b/rel`` headers.

    A last line without a newline is marked the way git marks it, so the diff applies.

    Args:
        rel: The workspace-relative path shown in the headers.
        old: The text before.
        new: The text after.

    Returns:
        The diff, or "" when the texts are equal.
    """
    if old == new:
        return ""
    out: list[str] = []
    for line in difflib.unified_diff(
        printable(old).splitlines(keepends=True),
        printable(new).splitlines(keepends=True),
        fromfile=f"a/{rel}",
        tofile=f"b/{rel}",
    ):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def atomic_write(path: Path, data: bytes) -> bool:
    """Write a file atomically: a temporary file in the same directory, then a rename.

    Parent directories are created. An existing file keeps its permission bits; a new
    one gets the usual ``0o666`` less the umask.

    Args:
        path: The file to write (already checked by the workspace guard).
        data: The new content.

    Returns:
        True when the file was created, False when an existing file was replaced.

    Raises:
        OSError: The file system refused (the caller turns it into a message).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.monkey-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return mode is None
