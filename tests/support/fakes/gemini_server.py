"""A small Gemini API on 127.0.0.1 for Gemini CLI's tests (``GOOGLE_GEMINI_BASE_URL``).

``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` answers with the next queued
:class:`GeminiReply` as server-sent events (text, or one function call); ``:generateContent``
(what the CLI asks on the side: the next speaker, a summary) answers one JSON object with
``{}`` as its text; ``:countTokens`` a count. When the queue is empty it answers ``no more
replies``. Every request's path and body are kept in :attr:`FakeGemini.requests`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeGemini", "GeminiReply"]


@dataclass
class GeminiReply:
    text: str = ""
    call: tuple[str, dict[str, Any]] | None = None
    """``(name, args)`` of one function call."""
    extra: dict[str, Any] = field(default_factory=dict)


class FakeGemini(LoopbackServer):
    def __init__(self, replies: list[GeminiReply] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[tuple[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                fake.requests.append((self.path, None))
                self.send_json(200, {"models": [{"name": "models/gemini-2.5-flash"}]})

            def do_POST(self) -> None:
                body = self.read_json()
                with fake._lock:
                    fake.requests.append((self.path, body))
                if ":countTokens" in self.path:
                    self.send_json(200, {"totalTokens": 10})
                    return
                if ":streamGenerateContent" in self.path:
                    with fake._lock:
                        reply = fake.replies.pop(0) if fake.replies else GeminiReply(text="no more replies")
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(b"data: " + json.dumps(_response(reply)).encode() + b"\r\n\r\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_json(200, _response(GeminiReply(text="{}")))

        super().__init__(Handler, name="fake-gemini")

    @property
    def url(self) -> str:
        return self.base_url


def _response(reply: GeminiReply) -> dict[str, Any]:
    part: dict[str, Any] = (
        {"functionCall": {"name": reply.call[0], "args": reply.call[1]}} if reply.call else {"text": reply.text}
    )
    return {
        "candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash",
    }
