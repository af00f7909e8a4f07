"""JSON-RPC 2.0 over a plugin's stdio: one message per line, both ways.

Reading: bytes come in chunks of any size (:class:`~monkey.backends.jsonl.LineFramer` makes
lines of them, up to a size limit); each line is decoded into a :class:`Frame`, or, when it
is not a JSON object (garbage, invalid UTF-8, an array), a :class:`BadLine` that says why.
A frame is a request (``method`` and ``id``), a notification (``method``, no ``id``) or a
response (``id`` with ``result`` or ``error``); :func:`kind` tells which. Writing:
:func:`request`, :func:`response` and :func:`error_response` make one line each.

See https://www.jsonrpc.org/specification for the shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from monkey.backends.jsonl import LineFramer, LineTooLong

__all__ = [
    "BadLine",
    "Frame",
    "LineTooLong",
    "RpcReader",
    "kind",
    "request",
    "response",
    "error_response",
    "METHOD_NOT_FOUND",
    "INVALID_REQUEST",
]

UNSET = msgspec.UNSET
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600


class Frame(msgspec.Struct, kw_only=True):
    """One JSON-RPC message as read (members a message lacks are ``UNSET``)."""

    jsonrpc: Any = UNSET
    id: Any = UNSET
    method: Any = UNSET
    params: Any = None
    result: Any = UNSET
    error: Any = UNSET


@dataclass(frozen=True)
class BadLine:
    """A line that is no JSON-RPC message: what it was (cut short) and why."""

    line: bytes
    why: str

    def shown(self) -> str:
        """The start of the line, printable."""
        text = self.line[:120].decode("utf-8", "replace")
        return "".join(ch if ch.isprintable() else "?" for ch in text) + ("..." if len(self.line) > 120 else "")


_decode = msgspec.json.Decoder(Frame).decode
_encode = msgspec.json.Encoder().encode


def kind(frame: Frame) -> str:
    """``notification``, ``request``, ``response``, or ``invalid`` (neither a method nor a result/error)."""
    if frame.method is not UNSET:
        if not isinstance(frame.method, str):
            return "invalid"
        return "notification" if frame.id is UNSET else "request"
    if frame.id is not UNSET and (frame.result is not UNSET or frame.error is not UNSET):
        return "response"
    return "invalid"


class RpcReader:
    """Frames out of a byte stream, whatever its chunking."""

    __slots__ = ("_framer",)

    def __init__(self, limit: int) -> None:
        self._framer = LineFramer(limit)

    @property
    def limit(self) -> int:
        """Bytes one line may have."""
        return self._framer.limit

    def feed(self, data: bytes) -> list[Frame | BadLine]:
        """The messages completed by ``data``; raises :class:`LineTooLong` when a line passes the limit."""
        return [self._one(line) for line in self._framer.feed(data) if line.strip()]

    def close(self) -> list[Frame | BadLine]:
        """The last line, when the stream ended without its newline."""
        rest = self._framer.close()
        return [self._one(rest)] if rest is not None else []

    @staticmethod
    def _one(line: bytes) -> Frame | BadLine:
        try:
            return _decode(line)
        except msgspec.ValidationError:
            return BadLine(line[:400], "not a JSON object")
        except msgspec.DecodeError:
            return BadLine(line[:400], "not valid JSON")
        except UnicodeDecodeError:
            return BadLine(line[:400], "not valid UTF-8")


def request(rid: int, method: str, params: Any) -> bytes:
    """A request line."""
    return _encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + b"\n"


def response(rid: Any, result: Any) -> bytes:
    """A response line."""
    return _encode({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"


def error_response(rid: Any, code: int, message: str) -> bytes:
    """An error response line."""
    return _encode({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}) + b"\n"
