"""A small HTTP server on 127.0.0.1 that answers like the Anthropic Messages API.

It serves queued responses in order, one per request: a stream of server-sent events in
the recorded wire format (``message_start``, ``content_block_*`` with ``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``, ``ping``, ``message_delta``,
``message_stop``, or an ``error`` event), a plain status with a JSON error body and
headers (401, 429 with ``retry-after``, 529, 500), or a stream that drops the connection
after some events. Bodies of the requests are kept for assertions. Used by the tests and
by ``tools/bench.py backends``; the real ``anthropic`` SDK talks to it through ``base_url``.

With ``cache=True`` it keeps a prompt cache the way the API documents it: the request is a
sequence of blocks (tools, system, then each message's content blocks); a ``cache_control``
breakpoint writes the prefix up to it; a later request reads the longest cached prefix that
ends at a block at most 20 blocks before one of its breakpoints and is byte-for-byte the
same. The usage of each answer then says the cached and written tokens (four characters a
token), so a test can see whether a request reused what the one before it wrote.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeAnthropic", "PromptCache", "Stream", "Status", "reply_events", "error_body", "sse"]

SseEvent = tuple[str, "dict[str, Any] | str"]
"""An event name and its data: an object, or raw text sent as it is (to test bad input)."""


@dataclass
class Stream:
    """A 200 answer streaming ``events``; ``drop_after`` closes the socket after that many."""

    events: list[SseEvent]
    drop_after: int | None = None
    delay: float = 0.0
    chunk_events: int = 1
    """Events written per HTTP chunk (more per chunk is closer to a fast real server)."""


@dataclass
class Status:
    """A non-streaming answer: ``code`` with a JSON body and headers."""

    code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An Anthropic error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def sse(name: str, data: dict[str, Any] | str) -> bytes:
    """One server-sent event as the API writes it."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"event: {name}\ndata: {text}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def reply_events(
    text: str = "",
    *,
    thinking: str = "",
    signature: str = "sig-abc",
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    model: str = "claude-sonnet-4-5-20250929",
    input_tokens: int = 120,
    output_tokens: int = 30,
    cache_write: int = 0,
    cache_read: int = 0,
    piece: int = 7,
    json_piece: int = 9,
    ping: bool = True,
    error: dict[str, Any] | None = None,
    error_after_text: int | None = None,
) -> list[SseEvent]:
    """The events of one streamed message, split the way the API splits them.

    ``error`` puts an ``error`` event after ``error_after_text`` text deltas (and ends
    the stream there).
    """
    stop = "tool_use" if tool_calls else "end_turn"
    events: list[SseEvent] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_fake01", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": cache_write,
                  "cache_read_input_tokens": cache_read, "output_tokens": 1}}})]
    index = 0
    if thinking:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
        for p in _pieces(thinking, piece):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "thinking_delta", "thinking": p}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "signature_delta", "signature": signature}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if ping:
        events.append(("ping", {"type": "ping"}))
    if text:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        for n, p in enumerate(_pieces(text, piece)):
            if error is not None and error_after_text is not None and n == error_after_text:
                events.append(("error", error))
                return events
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": p}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call_id, name, args in tool_calls:
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call_id, "name": name, "input": {}}}))
        for p in _pieces(json.dumps(args), json_piece):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": p}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if error is not None:
        events.append(("error", error))
        return events
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": output_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        prefix = "/v1/models/"
        model = self.path[len(prefix):] if self.path.startswith(prefix) else None
        if model is not None and model in self.server.owner.models:
            self._send_json(200, {"type": "model", "id": model, "display_name": model,
                                  "created_at": "2026-01-01T00:00:00Z"}, {})
        else:
            self._send_json(404, error_body("not_found_error", f"not found: {self.path}"), {})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.read_body()
        owner: FakeAnthropic = self.server.owner
        with owner.lock:
            body = json.loads(raw or b"{}")
            owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            answer = owner.queue.pop(0) if owner.queue else owner.default
            if owner.cache is not None and isinstance(answer, Stream):
                answer = Stream(_with_usage(answer.events, owner.cache.use(body)), answer.drop_after,
                                answer.delay, answer.chunk_events)
        if answer is None:
            self._send_json(500, error_body("api_error", "the fake server has no answer queued"), {})
        elif isinstance(answer, Status):
            self._send_json(answer.code, answer.body, answer.headers)
        else:
            self._stream(answer)

    def _send_json(self, code: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.send_json(code, body, {"request-id": "req_fake", **headers})

    def _stream(self, answer: Stream) -> None:
        import time

        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        events = answer.events
        step = max(1, answer.chunk_events)
        for start in range(0, len(events), step):
            if answer.drop_after is not None and start >= answer.drop_after:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if answer.delay:
                time.sleep(answer.delay)
            payload = b"".join(sse(name, data) for name, data in events[start : start + step])
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class PromptCache:
    """The API's prompt cache, as documented (see the module's docstring)."""

    LOOKBACK = 20

    def __init__(self) -> None:
        self.prefixes: set[str] = set()

    @staticmethod
    def blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
        """The request's blocks in cache order: tools, system, messages."""
        out = [dict(t) for t in body.get("tools", [])]
        system = body.get("system", [])
        out += [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
        for m in body.get("messages", []):
            content = m["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out += [{"role": m["role"], **b} for b in blocks]
        return out

    def use(self, body: dict[str, Any]) -> dict[str, int]:
        """The usage of one request: cached tokens read and written, and the rest."""
        blocks = self.blocks(body)
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        keys, sizes, h, size = [], [], hashlib.sha256(), 0
        for b in blocks:
            plain = json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True)
            h.update(plain.encode())
            size += len(plain)
            keys.append(h.copy().hexdigest())
            sizes.append(size)
        read = -1
        for m in marks:
            for i in range(m, max(-1, m - self.LOOKBACK), -1):
                if keys[i] in self.prefixes:
                    read = max(read, i)
                    break
        last = marks[-1] if marks else -1
        self.prefixes.update(keys[m] for m in marks)
        read_chars = sizes[read] if read >= 0 else 0
        written = (sizes[last] if last >= 0 else 0) - read_chars if last > read else 0
        total = sizes[-1] if sizes else 0
        return {"cache_read_input_tokens": read_chars // 4, "cache_creation_input_tokens": max(0, written) // 4,
                "input_tokens": max(1, (total - read_chars - max(0, written)) // 4)}


def _with_usage(events: list[SseEvent], usage: dict[str, int]) -> list[SseEvent]:
    out: list[SseEvent] = []
    for name, data in events:
        if name == "message_start" and isinstance(data, dict):
            message = dict(data["message"])
            message["usage"] = {**message.get("usage", {}), **usage}
            data = {**data, "message": message}
        out.append((name, data))
    return out


class FakeAnthropic(LoopbackServer):
    """The server; a context manager that serves on a free port of 127.0.0.1."""

    def __init__(self, *, cache: bool = False) -> None:
        self.cache = PromptCache() if cache else None
        """The prompt cache the answers' usage reports (None: the queued usage as it is)."""
        self.queue: list[Stream | Status] = []
        self.default: Stream | Status | None = None
        """Served when the queue is empty (None: a 500 that says so)."""
        self.requests: list[dict[str, Any]] = []
        self.models: set[str] = {"claude-sonnet-4-6", "claude-opus-4-5", "claude-haiku-4-5"}
        """What ``GET /v1/models/{id}`` finds."""
        self.lock = threading.Lock()
        super().__init__(_Handler, name="fake-anthropic")

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return self.base_url

    def add(self, *answers: Stream | Status) -> FakeAnthropic:
        """Queue answers, served one per request in order."""
        with self.lock:
            self.queue.extend(answers)
        return self
