"""Newline framing of a child's stdout, shared by the external-agent stream parsers.

Bytes come in chunks of any size; complete lines (``\\n`` or ``\\r\\n``) come out. A line
may be tens of megabytes long; nothing is split or dropped. The last line may lack its
newline (:meth:`LineFramer.close` gives it back).
"""

from __future__ import annotations

__all__ = ["LineFramer"]


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
