"""A small OpenAI-compatible chat completions server on 127.0.0.1, for the plugin tests.

``GET /v1/models`` lists one model; ``POST /v1/chat/completions`` answers with the next
queued :class:`Reply` (streamed as server-sent events in the API's chunk shape when the
request says ``stream``, else one JSON object): text split into pieces, tool calls with
their arguments split across chunks, and a last chunk with ``usage`` when asked for with
``stream_options.include_usage``. A ``status`` reply answers with that HTTP error instead.
When the queue is empty it answers ``no more replies`` as text. Every request body is kept
in :attr:`FakeOpenAI.requests`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeOpenAI", "Reply"]


@dataclass
class Reply:
    """One answer of the model."""

    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """``(id, name, arguments)`` of each call."""
    status: int = 0
    """An HTTP error instead of an answer (0: none)."""
    usage: tuple[int, int] = (11, 5)


class FakeOpenAI(LoopbackServer):
    """The server; use as a context manager (``url`` ends with ``/v1``)."""

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self.send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self.send_json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = self.read_json()
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_json(404, {"error": {"message": "not found"}})
                    return
                with fake._lock:
                    fake.requests.append(body)
                    reply = fake.replies.pop(0) if fake.replies else Reply(text="no more replies")
                if reply.status:
                    self.send_json(
                        reply.status, {"error": {"message": f"fake error {reply.status}", "type": "server_error"}}
                    )
                elif body.get("stream"):
                    self._stream(body, reply)
                else:
                    self.send_json(200, fake.completion(body, reply))

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in fake.chunks(body, reply):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"

    @staticmethod
    def _base(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "fake-model"),
        }

    def chunks(self, body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
        base = self._base(body)
        out = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        for i in range(0, len(reply.text), 6):
            out.append({**base, "choices": [{"index": 0, "delta": {"content": reply.text[i : i + 6]}}]})
        for n, (cid, name, args) in enumerate(reply.tool_calls):
            text = json.dumps(args)
            half = len(text) // 2
            out.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": n,
                                        "id": cid,
                                        "type": "function",
                                        "function": {"name": name, "arguments": text[:half]},
                                    }
                                ]
                            },
                        }
                    ],
                }
            )
            out.append(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"tool_calls": [{"index": n, "function": {"arguments": text[half:]}}]}}
                    ],
                }
            )
        finish = "tool_calls" if reply.tool_calls else "stop"
        out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            prompt, completion = reply.usage
            out.append(
                {
                    **base,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    },
                }
            )
        return out

    def completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in reply.tool_calls
            ]
        prompt, completion = reply.usage
        return {
            **self._base(body),
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
