"""The running hash that chains a session's rows, and checking a stored chain.

Each row's hash covers the previous row's hash, its sequence number, its tag (event type
or node kind) and its bytes. Checking a chain tells apart a row that was changed (its
hash no longer matches although its predecessor is there) from rows that are missing (a
gap in the sequence numbers), so a damaged session can say exactly what was lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["link", "ChainCheck", "check_chain", "unpack"]

_blake2b = hashlib.blake2b


def link(prev: bytes, seq: int, tag: str, data: bytes) -> bytes:
    """The hash of one row given the hash of the row before it (``b""`` for the first)."""
    return _blake2b(b"".join((prev, seq.to_bytes(8, "big"), tag.encode(), b"\0", data)), digest_size=16).digest()


@dataclass
class ChainCheck:
    """What checking one chain found."""

    rows: int = 0
    last_seq: int = 0
    last_hash: bytes = b""
    missing: list[tuple[int, int]] = field(default_factory=list)
    """Ranges ``(first, last)`` of sequence numbers that are not there."""
    altered: list[int] = field(default_factory=list)
    """Sequence numbers of rows whose content does not match their hash."""

    @property
    def ok(self) -> bool:
        """Whether the chain is whole."""
        return not self.missing and not self.altered

    def describe(self, what: str) -> str:
        """One line for a person, e.g. ``events: 2 missing (40-41), 1 altered (57)``."""
        parts = []
        if self.missing:
            count = sum(b - a + 1 for a, b in self.missing)
            spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.missing[:5])
            parts.append(f"{count} missing ({spans})")
        if self.altered:
            shown = ", ".join(str(s) for s in self.altered[:5])
            parts.append(f"{len(self.altered)} altered ({shown}{', ...' if len(self.altered) > 5 else ''})")
        return f"{what}: " + ("; ".join(parts) if parts else "intact")


def _as_bytes(value: object) -> bytes:
    """Row data as bytes, whatever type a damaged or edited row holds."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return repr(value).encode()


def unpack(rows: Iterable[tuple[int, str, object, bytes, int]]) -> Iterator[tuple[int, str, bytes, bytes | None]]:
    """One ``(seq, tag, data, hash)`` per event from rows ``(seq, tag, data, hash, n)`` that may
    hold ``n`` events (their data joined by newlines, ``seq`` and ``hash`` the last one's);
    the events inside a row have no stored hash (``None``)."""
    for seq, tag, data, stored, n in rows:
        data = _as_bytes(data)
        if n == 1:
            yield seq, tag, data, stored
            continue
        parts = data.split(b"\n")
        first = seq - len(parts) + 1
        for k, part in enumerate(parts):
            yield first + k, tag, part, stored if k == len(parts) - 1 else None


def check_chain(rows: Iterable[tuple[int, str, bytes, bytes | None]]) -> ChainCheck:
    """Check rows ``(seq, tag, data, hash)`` in ``seq`` order; a row without a stored hash
    (``None``, inside a run, see :func:`unpack`) is checked with the next one that has it."""
    result = ChainCheck()
    prev_seq, prev_hash = 0, b""
    unknown = False  # after a gap, until the next stored hash: nothing to check against
    for seq, tag, data, stored in rows:
        result.rows += 1
        data = _as_bytes(data)
        if seq != prev_seq + 1:
            result.missing.append((prev_seq + 1, seq - 1))
            unknown = True
        if unknown:
            unknown = stored is None
        else:
            computed = link(prev_hash, seq, tag, data)
            if stored is None:
                stored = computed
            elif computed != stored:
                result.altered.append(seq)
        prev_seq, prev_hash = seq, stored or b""
    result.last_seq, result.last_hash = prev_seq, prev_hash
    return result
