"""The terminal stream the app draws through: every write reaches the terminal whole.

Textual writes its frames to ``sys.__stderr__``. With ``PYTHONUNBUFFERED`` set (or ``python -u``)
that is a text stream straight over the file descriptor: one ``write`` is one write(2), and what
write(2) did not take is dropped. A terminal that reads slowly (a loaded machine, a remote link)
takes a frame 2 KiB at a time, and a signal that comes while the app waits for it ends the
write(2) early, with part of the frame written. A full-screen frame is then drawn half; an inline
region (``--inline``) is drawn lower from then on (its frames move the cursor relative to where the
last one left it), its old lines stay above it and the lines above it scroll away. Here the rest is
written too, whatever the buffering.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import sys
from collections.abc import Iterator
from typing import IO, cast

__all__ = ["WholeWrites", "whole", "whole_frames"]


class WholeWrites(io.TextIOBase):
    """A text stream over ``stream``'s file descriptor that writes each text whole, at once."""

    def __init__(self, stream: IO[str]) -> None:
        stream.flush()  # what the stream holds goes first
        self._fd = stream.fileno()
        self._encoding = getattr(stream, "encoding", None) or "utf-8"
        self._errors = getattr(stream, "errors", None) or "strict"

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    @property
    def errors(self) -> str:  # type: ignore[override]
        return self._errors

    def write(self, text: str) -> int:
        data = memoryview(text.encode(self._encoding, self._errors))
        while data:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:  # a descriptor another process made non-blocking
                select.select([], [self._fd], [])
                continue
            data = data[written:]
        return len(text)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        """Nothing is held: each write is written when it is made."""

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)


def whole(stream: IO[str]) -> IO[str]:
    """``stream`` writing each text whole, or ``stream`` itself when it has no file descriptor
    (a test's capture, an in-memory buffer)."""
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return stream
    return cast(IO[str], WholeWrites(stream))  # a text stream, as typeshed's IO names one


@contextlib.contextmanager
def whole_frames() -> Iterator[None]:
    """While the app runs: the stream Textual's driver draws on (``sys.__stderr__``, taken when
    the app starts) writes every frame whole."""
    stream = sys.__stderr__
    if stream is None:
        yield
        return
    sys.__stderr__ = whole(stream)  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        sys.__stderr__ = stream  # type: ignore[misc]
