"""A tiny fake Ollama server on 127.0.0.1: ``GET /api/tags`` and streaming ``POST /api/generate``.

``/api/generate`` answers, as Ollama does, one JSON object per line: the reply in pieces
(``{"model", "response", "done": false}``), then ``{"done": true, "prompt_eval_count",
"eval_count"}``. The reply is ``Hello from MODEL: PROMPT``; every request body is kept in
:attr:`FakeOllama.requests`.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.fakes.loopback import LoopbackServer, QuietHandler

__all__ = ["FakeOllama"]


class FakeOllama(LoopbackServer):
    """The server; a context manager (``url`` is its base, as ``OLLAMA_HOST`` takes it)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self.send_json(200, {"models": [{"name": "codellama:13b"}, {"name": "codellama:7b"}]})
                else:
                    self.send_error(404)

            def do_POST(self) -> None:
                body = self.read_json()
                if self.path != "/api/generate":
                    self.send_error(404)
                    return
                fake.requests.append(body)
                reply = f"Hello from {body.get('model')}: {body.get('prompt')}"
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                for i in range(0, len(reply), 5):
                    self.wfile.write(
                        json.dumps({"model": body.get("model"), "response": reply[i : i + 5], "done": False}).encode()
                        + b"\n"
                    )
                    self.wfile.flush()
                self.wfile.write(
                    json.dumps(
                        {
                            "model": body.get("model"),
                            "response": "",
                            "done": True,
                            "prompt_eval_count": 12,
                            "eval_count": 8,
                        }
                    ).encode()
                    + b"\n"
                )

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return self.base_url
