"""Newline framing of a child's stdout, shared by the external-agent stream parsers.

Bytes come in chunks of any size; complete lines (``\\n`` or ``\\r\\n``) come out. A line
may be megabytes long, up to a limit (:data:`DEFAULT_MAX_LINE`, ``max_line_bytes`` in the
backend's config): a longer one is never held in memory; the parser reports it in
:attr:`JsonlParser.error` and sets :attr:`JsonlParser.too_long`, and the backend stops the
child. The last line may lack its newline (:meth:`LineFramer.close` gives it back).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import msgspec

from monkey.events import Event, Raw

__all__ = ["LineFramer", "JsonlParser", "LineTooLong", "DEFAULT_MAX_LINE"]

_decode = msgspec.json.Decoder().decode

_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)
"""What a handler trips on when a known type comes with unexpected fields: the line is raw, not a crash."""

DEFAULT_MAX_LINE = 8 << 20
"""Bytes one line of a child's output may have (8 MiB): a recorded Claude Code line with a
large file's content is well under it; an endless line is stopped there."""


class LineTooLong(Exception):
    """A line grew past the framer's limit (its bytes were dropped)."""


class LineFramer:
    """Splits a byte stream into lines, whatever the chunking."""

    __slots__ = ("_parts", "_held", "limit")

    def __init__(self, limit: int = DEFAULT_MAX_LINE) -> None:
        self._parts: list[bytes] = []
        """Pieces of the unfinished line (kept apart so a huge line is joined once)."""
        self._held = 0
        self.limit = limit
        """Bytes a line may have; a longer one raises :class:`LineTooLong`."""

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by ``data`` (without their line endings).

        Raises :class:`LineTooLong` (dropping what was held) when a line passes :attr:`limit`.
        """
        if not data:
            return []
        if b"\n" not in data:
            self._held += len(data)
            if self._held > self.limit:
                self._overflow()
            self._parts.append(data)
            return []
        if self._parts:
            if self._held + data.index(b"\n") > self.limit:
                self._overflow()
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        lines = data.split(b"\n")
        rest = lines.pop()
        self._held = len(rest)
        if rest:
            self._parts.append(rest)
        if self._held > self.limit or any(len(line) > self.limit for line in lines):
            self._overflow()
        return [line[:-1] if line.endswith(b"\r") else line for line in lines]

    def _overflow(self) -> None:
        self._parts = []
        self._held = 0
        raise LineTooLong(self.limit)

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held so far."""
        return self._held

    def close(self) -> bytes | None:
        """The unfinished last line, if any (the stream ended without a newline)."""
        rest = b"".join(self._parts)
        self._parts = []
        self._held = 0
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        return rest if rest.strip() else None


class JsonlParser(ABC):
    """Base of the stream parsers: framing, unknown-line counting, the end-of-stream check.

    A subclass handles one complete line in :meth:`_line` and says in :meth:`_incomplete`
    why a stream that ended where it did is unfinished ("" when it is complete).
    """

    source = ""
    """The ``source`` of the :class:`~monkey.events.Raw` events this parser makes."""

    def __init__(self) -> None:
        self._framer = LineFramer()
        self.error = ""
        """Why the run failed, for a person ("" while nothing went wrong)."""
        self.unknown = 0
        """Lines that no known shape fit (non-JSON, unknown types, wrong fields)."""
        self.lines = 0
        self.too_long = False
        """Whether a line passed :attr:`max_line` (the stream is over: stop the child)."""

    @property
    def max_line(self) -> int:
        """Bytes one line may have (:data:`DEFAULT_MAX_LINE` unless set)."""
        return self._framer.limit

    @max_line.setter
    def max_line(self, value: int) -> None:
        self._framer.limit = value

    def feed(self, data: bytes) -> list[Event]:
        """Events of the lines completed by ``data``; nothing more once a line was too long."""
        out: list[Event] = []
        if self.too_long:
            return out
        try:
            lines = self._framer.feed(data)
        except LineTooLong:
            self.too_long = True
            self.error = (
                f"{self.source or 'the agent'} printed a line longer than {self.max_line} bytes "
                "(max_line_bytes); it was stopped"
            )
            return out
        for line in lines:
            self._line(line, out)
        return out

    def close(self) -> list[Event]:
        """Events of a last line without newline; notes an unfinished stream in :attr:`error`."""
        out: list[Event] = []
        if self.too_long:
            return out
        rest = self._framer.close()
        if rest is not None:
            self._line(rest, out)
        if not self.error:
            self.error = self._incomplete()
        return out

    def _raw(self, data: Any, out: list[Event]) -> None:
        self.unknown += 1
        out.append(Raw(source=self.source, data=data))

    def _json_line(self, line: bytes, out: list[Event]) -> None:
        """Decode ``line`` and append the events :meth:`_object` makes of it; a line that is not
        JSON, not an object, or of a shape :meth:`_object` does not know (it says False or trips
        on a field) is one :class:`~monkey.events.Raw` event, and nothing of it half-handled."""
        try:
            obj = _decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError):
            self._raw(line.decode("utf-8", "replace"), out)
            return
        got: list[Event] = []
        try:
            handled = isinstance(obj, dict) and self._object(obj, got)
        except _SHAPE_ERRORS:
            handled = False
        if handled:
            out.extend(got)
        else:
            self._raw(obj, out)

    def _object(self, obj: dict[str, Any], out: list[Event]) -> bool:
        """Append the events of one JSON object; False when its shape is not known (see :meth:`_json_line`)."""
        return False

    @abstractmethod
    def _line(self, line: bytes, out: list[Event]) -> None:
        """Append the events of one complete line to ``out``; never raise."""

    @abstractmethod
    def _incomplete(self) -> str:
        """Why the stream, ending now, is unfinished; "" when it is complete."""
