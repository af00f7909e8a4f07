"""Newline framing of a child's stdout, shared by the external-agent stream parsers.

Bytes come in chunks of any size; complete lines (``\\n`` or ``\\r\\n``) come out. A line
may be tens of megabytes long; nothing is split or dropped. The last line may lack its
newline (:meth:`LineFramer.close` gives it back).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from monkey.events import Event, Raw

__all__ = ["LineFramer", "JsonlParser"]


class LineFramer:
    """Splits a byte stream into lines, whatever the chunking."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        """Pieces of the unfinished line (kept apart so a huge line is joined once)."""

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by ``data`` (without their line endings)."""
        if not data:
            return []
        if b"\n" not in data:
            self._parts.append(data)
            return []
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._parts.append(rest)
        return [line[:-1] if line.endswith(b"\r") else line for line in lines]

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held so far."""
        return sum(map(len, self._parts))

    def close(self) -> bytes | None:
        """The unfinished last line, if any (the stream ended without a newline)."""
        rest = b"".join(self._parts)
        self._parts = []
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

    def feed(self, data: bytes) -> list[Event]:
        """Events of the lines completed by ``data``."""
        out: list[Event] = []
        for line in self._framer.feed(data):
            self._line(line, out)
        return out

    def close(self) -> list[Event]:
        """Events of a last line without newline; notes an unfinished stream in :attr:`error`."""
        out: list[Event] = []
        rest = self._framer.close()
        if rest is not None:
            self._line(rest, out)
        if not self.error:
            self.error = self._incomplete()
        return out

    def _raw(self, data: Any, out: list[Event]) -> None:
        self.unknown += 1
        out.append(Raw(source=self.source, data=data))

    @abstractmethod
    def _line(self, line: bytes, out: list[Event]) -> None:
        """Append the events of one complete line to ``out``; never raise."""

    @abstractmethod
    def _incomplete(self) -> str:
        """Why the stream, ending now, is unfinished; "" when it is complete."""
