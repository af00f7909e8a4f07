"""A small fake OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI.

It answers ``POST /v1/responses`` with a server-sent event stream in the Responses API's
shape (``response.created``, ``response.output_item.added|done``,
``response.output_text.delta``, ``response.completed`` with usage), chosen from the
request's last user message:

- ``create hello.txt``: a call of the shell tool Codex offers (``shell``,
  ``shell_command`` or ``exec_command``, whichever the request lists) that writes
  ``hello.txt``; once its output comes back, the closing text ``Done: hello.txt is written.``
  (the call comes after a short reasoning summary);
- ``patch notes.txt``: an ``apply_patch`` call that adds ``notes.txt``, then ``Patched.``
- ``cat missing.txt``: a shell call that fails (exit status 1), then ``That file is missing.``
- ``touch made.txt``: a shell call ``touch made.txt`` (a command a rule can allow), then
  ``Made.``;
- ``patch a hook``: an ``apply_patch`` call that adds ``.git/hooks/pre-commit``, then ``Hooked.``;
- ``sleep a while``: a shell call ``sleep 30 && touch slept.txt`` (to be stopped while its approval waits), then ``Slept.``;
- ``please fail``: a 400 error (not retried);
- anything else: ``Hello from the fake server (user messages: N).``

Every request is kept in :attr:`FakeResponses.requests`. Other paths (``GET /v1/models``
and the like) get an empty but well-formed answer.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeResponses", "codex_config"]

HELLO_CMD = "printf 'hi there\\n' > hello.txt && echo wrote hello.txt"
MISSING_CMD = "cat missing.txt"
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+patched by the fake model\n*** End Patch\n"
HOOK_PATCH = "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n+echo hooked\n*** End Patch\n"


_CLOSING = [
    ("patch notes.txt", "Patched."),
    ("cat missing.txt", "That file is missing."),
    ("touch made.txt", "Made."),
    ("patch a hook", "Hooked."),
    ("sleep a while", "Slept."),
]
"""The closing text of each case once its call's output came back."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


def codex_config(url: str, *, model: str = "gpt-fake", key_env: str = "FAKE_OPENAI_KEY") -> str:
    """A ``config.toml`` for ``CODEX_HOME`` that points Codex at the fake server ``url``."""
    return "\n".join(
        [
            f'model = "{model}"',
            'model_provider = "fake"',
            'approval_policy = "never"',
            "[model_providers.fake]",
            'name = "Fake OpenAI"',
            f'base_url = "{url}/v1"',
            'wire_api = "responses"',
            f'env_key = "{key_env}"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "stream_idle_timeout_ms = 20000",
            "",
        ]
    )


class FakeResponses(LoopbackServer):
    """The server; use as a context manager, ``url`` is its base URL (without ``/v1``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.count = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer.requests.append({"method": "GET", "path": self.path, "body": None})
                self.send_json(200, {"object": "list", "data": [], "models": []})

            def do_POST(self) -> None:
                raw = self.read_body()
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                outer.requests.append({"method": "POST", "path": self.path, "body": body})
                if self.path.rstrip("/").endswith("/responses"):
                    outer.answer(self, body)
                else:
                    self.send_json(404, {"error": {"message": f"the fake server has no {self.path}"}})

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return self.base_url

    # -- answers ---------------------------------------------------------------------

    def main_requests(self) -> list[dict[str, Any]]:
        """The ``/responses`` requests (each one model call of a turn)."""
        return [r for r in self.requests if r["method"] == "POST" and r["path"].rstrip("/").endswith("/responses")]

    def answer(self, handler: QuietHandler, body: dict[str, Any]) -> None:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        users = [i for i in items if i.get("type", "message") == "message" and i.get("role") == "user"]
        prompt = _text_of(users[-1].get("content")) if users else ""
        # the turn's own output so far: calls made after the last user message, and their results
        last_user = max((n for n, i in enumerate(items) if i in users), default=-1)
        after = items[last_user + 1 :]
        has_result = any(str(i.get("type", "")).endswith("_output") for i in after)
        if "please fail" in prompt:
            handler.send_json(
                400,
                {
                    "error": {
                        "message": "the fake server refuses this on purpose",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
            return
        with self._lock:
            self.count += 1
            n = self.count
        tools = {str(t.get("name", "")): t for t in body.get("tools") or [] if isinstance(t, dict)}
        output: list[dict[str, Any]]
        if "create hello.txt" in prompt and not has_result:
            output = [
                self._reasoning("**Writing the file**\n\nOne shell command will do.", n),
                self._shell_call(tools, n, HELLO_CMD),
            ]
        elif "cat missing.txt" in prompt and not has_result:
            output = [self._shell_call(tools, n, MISSING_CMD)]
        elif "patch notes.txt" in prompt and not has_result:
            output = [self._patch_call(tools, n)]
        elif "touch made.txt" in prompt and not has_result:
            output = [self._shell_call(tools, n, "touch made.txt")]
        elif "sleep a while" in prompt and not has_result:
            output = [self._shell_call(tools, n, "sleep 30 && touch slept.txt")]
        elif "patch a hook" in prompt and not has_result:
            output = [self._patch_call(tools, n, HOOK_PATCH)]
        elif has_result:
            text = next((said for asked, said in _CLOSING if asked in prompt), "Done: hello.txt is written.")
            output = [self._message(text, n)]
        else:
            turns = sum(1 for u in users if "say hello" in _text_of(u.get("content")))
            output = [self._message(f"Hello from the fake server (user messages: {turns}).", n)]
        self._stream(handler, body, output, n)

    @staticmethod
    def _message(text: str, n: int) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"msg_fake{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    @staticmethod
    def _reasoning(text: str, n: int) -> dict[str, Any]:
        return {
            "type": "reasoning",
            "id": f"rs_fake{n}",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": None,
        }

    @staticmethod
    def _shell_call(tools: dict[str, Any], n: int, cmd: str) -> dict[str, Any]:
        if "exec_command" in tools:
            name, args = "exec_command", {"cmd": cmd}
        elif "shell_command" in tools:
            name, args = "shell_command", {"command": cmd}
        else:
            name, args = "shell", {"command": ["bash", "-lc", cmd]}
        return {
            "type": "function_call",
            "id": f"fc_fake{n}",
            "call_id": f"call_fake{n}",
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }

    @staticmethod
    def _patch_call(tools: dict[str, Any], n: int, patch: str = PATCH) -> dict[str, Any]:
        tool = tools.get("apply_patch") or {}
        if tool.get("type") == "custom":  # the freeform (grammar) form
            return {
                "type": "custom_tool_call",
                "id": f"ctc_fake{n}",
                "call_id": f"call_fake{n}",
                "name": "apply_patch",
                "input": patch,
                "status": "completed",
            }
        if tool:
            return {
                "type": "function_call",
                "id": f"fc_fake{n}",
                "call_id": f"call_fake{n}",
                "name": "apply_patch",
                "arguments": json.dumps({"input": patch}),
                "status": "completed",
            }
        return {
            "type": "function_call",
            "id": f"fc_fake{n}",
            "call_id": f"call_fake{n}",
            "name": "shell",
            "arguments": json.dumps({"command": ["apply_patch", patch]}),
            "status": "completed",
        }

    def _stream(self, handler: QuietHandler, body: dict[str, Any], output: list[dict[str, Any]], n: int) -> None:
        rid = f"resp_fake{n}"
        base = {
            "id": rid,
            "object": "response",
            "created_at": 1700000000 + n,
            "model": body.get("model", "gpt-fake"),
            "status": "in_progress",
            "output": [],
        }
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": base},
            {"type": "response.in_progress", "response": base},
        ]
        for i, item in enumerate(output):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": i,
                        "item": {**item, "status": "in_progress", "content": []},
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.added",
                        "output_index": i,
                        "item_id": item["id"],
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    }
                )
                words = text.split(" ")
                for j, word in enumerate(words):
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            "output_index": i,
                            "item_id": item["id"],
                            "content_index": 0,
                            "delta": word if j == 0 else " " + word,
                        }
                    )
                events.append(
                    {
                        "type": "response.output_text.done",
                        "output_index": i,
                        "item_id": item["id"],
                        "content_index": 0,
                        "text": text,
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.done",
                        "output_index": i,
                        "item_id": item["id"],
                        "content_index": 0,
                        "part": item["content"][0],
                    }
                )
            elif item["type"] == "reasoning":
                text = item["summary"][0]["text"]
                events.append(
                    {"type": "response.output_item.added", "output_index": i, "item": {**item, "summary": []}}
                )
                events.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        "output_index": i,
                        "item_id": item["id"],
                        "summary_index": 0,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for j in range(0, len(text), 12):
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "output_index": i,
                            "item_id": item["id"],
                            "summary_index": 0,
                            "delta": text[j : j + 12],
                        }
                    )
                events.append(
                    {
                        "type": "response.reasoning_summary_text.done",
                        "output_index": i,
                        "item_id": item["id"],
                        "summary_index": 0,
                        "text": text,
                    }
                )
            else:
                events.append({"type": "response.output_item.added", "output_index": i, "item": item})
            events.append({"type": "response.output_item.done", "output_index": i, "item": item})
        usage = {
            "input_tokens": 1000 + n,
            "input_tokens_details": {"cached_tokens": 200},
            "output_tokens": 20 + n,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1020 + 2 * n,
        }
        events.append(
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": output, "usage": usage},
            }
        )
        data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
        handler.send_body(200, "text/event-stream", data)
