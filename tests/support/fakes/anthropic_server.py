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

With a ``workspace`` it is the model behind the real Claude Code CLI: when nothing is queued,
the answer is chosen from the request (:meth:`FakeAnthropic.respond`). A prompt containing
``create hello.txt`` gets a ``Write`` tool call, ``run the command`` a ``Bash`` call (``echo
from-bash > bash.txt``), ``write the hook`` a ``Write`` of ``.git/hooks/x``, ``append to bashrc``
a ``Bash`` call writing ``~/.bashrc`` (then, once the tool result comes back, a closing text that
says whether the tool was refused and why); ``please fail`` gets a 400 error; a request without
tools (a title, a summary) a short text; anything else a text that counts the user's messages.
Such an answer streams when the request asks for a stream and is one JSON message otherwise.
A subclass can override :meth:`~FakeAnthropic.reply` to answer other prompts.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = [
    "FakeAnthropic",
    "Message",
    "PromptCache",
    "Stream",
    "Status",
    "error_body",
    "reply_events",
    "sse",
    "text_of",
]

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


@dataclass
class Message:
    """A whole answer: ``text`` then ``tool_calls`` (id, name, input), streamed as events when the
    request asks for a stream, else one JSON message."""

    text: str
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    message_id: str = "msg_fake01"
    input_tokens: int = 20
    output_tokens: int = 10

    def json(self, model: str) -> dict[str, Any]:
        """The message as a non-streaming request gets it."""
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        blocks += [{"type": "tool_use", "id": i, "name": n, "input": args} for i, n, args in self.tool_calls]
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": "tool_use" if self.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def stream(self, model: str) -> Stream:
        """The message as a streaming request gets it."""
        return Stream(
            reply_events(
                self.text,
                tool_calls=self.tool_calls,
                model=model,
                message_id=self.message_id,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
            )
        )


Answer = Stream | Status | Message
"""What the server answers one ``POST /v1/messages`` with."""


def text_of(content: Any) -> str:
    """The text of a message's content: the string itself, or its text blocks joined by lines."""
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


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
    message_id: str = "msg_fake01",
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
    events: list[SseEvent] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": input_tokens,
                        "cache_creation_input_tokens": cache_write,
                        "cache_read_input_tokens": cache_read,
                        "output_tokens": 1,
                    },
                },
            },
        )
    ]
    index = 0
    if thinking:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
        )
        for p in _pieces(thinking, piece):
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}},
                )
            )
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": signature},
                },
            )
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if ping:
        events.append(("ping", {"type": "ping"}))
    if text:
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for n, p in enumerate(_pieces(text, piece)):
            if error is not None and error_after_text is not None and n == error_after_text:
                events.append(("error", error))
                return events
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call_id, name, args in tool_calls:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for p in _pieces(json.dumps(args), json_piece):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if error is not None:
        events.append(("error", error))
        return events
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        prefix = "/v1/models/"
        model = self.path[len(prefix) :] if self.path.startswith(prefix) else None
        if model is None:  # a listing (Claude Code asks for some): nothing
            self._send_json(200, {"data": [], "has_more": False}, {})
        elif model in self.server.owner.models:
            self._send_json(
                200, {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z"}, {}
            )
        else:
            self._send_json(404, error_body("not_found_error", f"not found: {self.path}"), {})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.read_body()
        owner: FakeAnthropic = self.server.owner
        with owner.lock:
            body = json.loads(raw or b"{}")
            owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            answer: Answer | None
            if owner.queue:
                answer = owner.queue.pop(0)
            else:
                answer = owner.default if owner.default is not None else owner.respond(self.path, body)
            if isinstance(answer, Message):
                model = body.get("model", "claude-fake")
                answer = answer.stream(model) if body.get("stream") else Status(200, answer.json(model))
            if owner.cache is not None and isinstance(answer, Stream):
                answer = Stream(
                    _with_usage(answer.events, owner.cache.use(body)),
                    answer.drop_after,
                    answer.delay,
                    answer.chunk_events,
                )
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
        return {
            "cache_read_input_tokens": read_chars // 4,
            "cache_creation_input_tokens": max(0, written) // 4,
            "input_tokens": max(1, (total - read_chars - max(0, written)) // 4),
        }


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
    """The server; a context manager that serves on a free port of 127.0.0.1.

    ``workspace``: answer by the prompt when nothing is queued (Claude Code's model, see the
    module's docstring), with the files its tool calls write under that folder.
    """

    def __init__(self, workspace: str | None = None, *, cache: bool = False) -> None:
        self.workspace = workspace
        self.cache = PromptCache() if cache else None
        """The prompt cache the answers' usage reports (None: the queued usage as it is)."""
        self.queue: list[Answer] = []
        self.default: Answer | None = None
        """Served when the queue is empty (None: :meth:`respond`)."""
        self.requests: list[dict[str, Any]] = []
        """Every request: its ``path``, ``headers`` and ``body`` (parsed)."""
        self.count = 0
        """How many answers :meth:`respond` has chosen."""
        self.models: set[str] = {"claude-sonnet-4-6", "claude-opus-4-5", "claude-haiku-4-5"}
        """What ``GET /v1/models/{id}`` finds."""
        self.lock = threading.Lock()
        super().__init__(_Handler, name="fake-anthropic")

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return self.base_url

    def add(self, *answers: Answer) -> FakeAnthropic:
        """Queue answers, served one per request in order."""
        with self.lock:
            self.queue.extend(answers)
        return self

    def main_requests(self) -> list[dict[str, Any]]:
        """The requests of the agent's own conversation (they offer tools)."""
        return [r for r in self.requests if r["path"].startswith("/v1/messages") and r["body"].get("tools")]

    def respond(self, path: str, body: dict[str, Any]) -> Answer | None:
        """The answer chosen from the request when nothing is queued (None without a workspace:
        a 500 that says nothing is queued); a POST elsewhere than ``/v1/messages`` (counting
        tokens) gets a count."""
        if self.workspace is None:
            return None
        if not path.startswith("/v1/messages") or "count_tokens" in path:
            return Status(200, {"input_tokens": 10})
        return self.reply(body)

    def reply(self, body: dict[str, Any]) -> Answer:
        """The answer to a ``POST /v1/messages`` chosen from its prompt (see the module's docstring);
        a subclass overrides it to answer other prompts."""
        messages = body.get("messages") or []
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        last = users[-1] if users else {"content": ""}
        content = last.get("content")
        results = [
            b
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        prompt = text_of(content)
        if "please fail" in prompt:
            return Status(400, error_body("invalid_request_error", "the fake server refuses this on purpose"))
        self.count += 1
        mid = f"msg_fake{self.count}"
        if not body.get("tools"):  # a side request (a title, a summary): answer briefly
            return Message("Fake title", message_id=mid)
        if not results and (tool := self._tool_for(prompt)) is not None:
            return Message("I'll do it.", [(f"toolu_fake{self.count}", *tool)], message_id=mid)
        if results and results[-1].get("is_error"):
            return Message("The tool was refused: " + text_of(results[-1].get("content")), message_id=mid)
        if results:
            return Message("Done: hello.txt is written.", message_id=mid)
        turns = sum(1 for m in users if text_of(m.get("content")))
        return Message(f"Hello from the fake server (user messages: {turns}).", message_id=mid)

    def _tool_for(self, prompt: str) -> tuple[str, dict[str, Any]] | None:
        ws = self.workspace or "."
        if "create hello.txt" in prompt:
            return "Write", {"file_path": f"{ws}/hello.txt", "content": "hi there\n"}
        if "run the command" in prompt:
            return "Bash", {"command": "echo from-bash > bash.txt", "description": "Write bash.txt"}
        if "write the hook" in prompt:
            return "Write", {"file_path": f"{ws}/.git/hooks/x", "content": "#!/bin/sh\necho pwned\n"}
        if "append to bashrc" in prompt:
            return "Bash", {"command": "echo pwned >> ~/.bashrc", "description": "Change the shell"}
        return None
