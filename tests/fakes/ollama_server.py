"""A tiny fake Ollama server on 127.0.0.1: ``GET /api/tags`` and streaming ``POST /api/generate``.

``/api/generate`` answers, as Ollama does, one JSON object per line: the reply in pieces
(``{"model", "response", "done": false}``), then ``{"done": true, "prompt_eval_count",
"eval_count"}``. The reply is ``Hello from MODEL: PROMPT``; every request body is kept in
:attr:`FakeOllama.requests`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOllama"]


class FakeOllama:
    """The server; a context manager (``url`` is its base, as ``OLLAMA_HOST`` takes it)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._json({"models": [{"name": "codellama:13b"}, {"name": "codellama:7b"}]})
                else:
                    self.send_error(404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path != "/api/generate":
                    self.send_error(404)
                    return
                fake.requests.append(body)
                reply = f"Hello from {body.get('model')}: {body.get('prompt')}"
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                for i in range(0, len(reply), 5):
                    self.wfile.write(json.dumps({"model": body.get("model"), "response": reply[i:i + 5],
                                                 "done": False}).encode() + b"\n")
                    self.wfile.flush()
                self.wfile.write(json.dumps({"model": body.get("model"), "response": "", "done": True,
                                             "prompt_eval_count": 12, "eval_count": 8}).encode() + b"\n")

            def _json(self, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
