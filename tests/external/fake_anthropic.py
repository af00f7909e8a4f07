"""A small fake Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI.

It answers ``POST /v1/messages`` with a streamed (SSE) or plain message, chosen from the
request: a prompt containing ``create hello.txt`` gets a ``Write`` tool call, ``run the
command`` a ``Bash`` call (``echo from-bash > bash.txt``), ``write the hook`` a ``Write``
of ``.git/hooks/x``, ``append to bashrc`` a ``Bash`` call writing ``~/.bashrc`` (then, once
the tool result comes back, a closing text that says whether the tool was refused and
why); a prompt containing ``please fail`` gets a 400 error; anything else gets a short
text answer that names the turn. Every request is
recorded in :attr:`FakeAnthropic.requests`.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeAnthropic"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "\n".join(parts)


class FakeAnthropic(LoopbackServer):
    """The server; use as a context manager, ``url`` is its base URL."""

    def __init__(self, workspace: str = "") -> None:
        self.workspace = workspace
        self.requests: list[dict[str, Any]] = []
        self.count = 0
        outer = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self.send_json(200, {"data": [], "has_more": False})

            def do_POST(self) -> None:
                body = self.read_json()
                outer.requests.append({"path": self.path, "body": body})
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_json(200, {"input_tokens": 10})
                    return
                outer.answer(self, body)

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return self.base_url

    # -- answers ---------------------------------------------------------------------

    def main_requests(self) -> list[dict[str, Any]]:
        """Requests of the agent's own conversation (they carry tools)."""
        return [r for r in self.requests if r["path"].startswith("/v1/messages") and r["body"].get("tools")]

    def answer(self, handler: QuietHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        first = _text_of(messages[0]["content"]) if messages else ""
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        last = users[-1] if users else {"content": ""}
        results = [b for b in (last.get("content") if isinstance(last.get("content"), list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        has_result = bool(results)
        prompt = _text_of(last.get("content"))
        if "please fail" in prompt:
            handler.send_json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                         "message": "the fake server refuses this on purpose"}})
            return
        self.count += 1
        blocks: list[dict[str, Any]]
        if not body.get("tools"):  # a side request (a title, a summary): answer briefly
            blocks = [{"type": "text", "text": "Fake title"}]
        elif not has_result and (tool := self._tool_for(prompt)) is not None:
            blocks = [{"type": "text", "text": "I'll do it."},
                      {"type": "tool_use", "id": f"toolu_fake{self.count}", "name": tool[0], "input": tool[1]}]
        elif has_result and results[-1].get("is_error"):
            blocks = [{"type": "text", "text": "The tool was refused: " + _text_of(results[-1].get("content"))}]
        elif has_result:
            blocks = [{"type": "text", "text": "Done: hello.txt is written."}]
        else:
            turns = sum(1 for m in messages if m.get("role") == "user" and _text_of(m.get("content")))
            blocks = [{"type": "text", "text": f"Hello from the fake server (user messages: {turns}). {first[:0]}"}]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        if body.get("stream"):
            self._stream(handler, body, blocks, stop)
        else:
            handler.send_json(200, self._message(body, blocks, stop))

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

    def _message(self, body: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {"id": f"msg_fake{self.count}", "type": "message", "role": "assistant",
                "model": body.get("model", "claude-fake"), "content": blocks, "stop_reason": stop,
                "stop_sequence": None, "usage": {"input_tokens": 20, "output_tokens": 10,
                                                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    def _stream(self, handler: QuietHandler, body: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> None:
        msg = self._message(body, [], stop)
        msg["stop_reason"] = None
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": msg})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                words = block["text"].split(" ")
                for j, word in enumerate(words):
                    piece = word if j == 0 else " " + word
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "text_delta", "text": piece}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
                raw = json.dumps(block["input"])
                for j in range(0, len(raw), 15):
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                        "type": "input_json_delta", "partial_json": raw[j:j + 15]}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": 10}}))
        events.append(("message_stop", {"type": "message_stop"}))
        data = b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode() for name, ev in events)
        handler.send_body(200, "text/event-stream", data)
