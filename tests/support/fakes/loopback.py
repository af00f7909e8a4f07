"""The HTTP plumbing every fake API server of the tests shares.

:class:`LoopbackServer` serves a request handler on a free port of 127.0.0.1 from a daemon
thread, as a context manager (started on enter, shut down and closed on exit); a fake
subclasses it and passes its handler class. :class:`QuietHandler` is a request handler that
logs nothing and reads and writes bodies: a JSON request, a JSON answer, or any bytes with
their length. What each fake answers stays in the fake.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["LoopbackServer", "OwnedServer", "QuietHandler"]


class OwnedServer(ThreadingHTTPServer):
    """The HTTP server; its handlers reach the fake that runs it as ``self.server.owner``."""

    daemon_threads = True
    owner: Any


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing, with helpers to read and write bodies."""

    server: OwnedServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def read_body(self) -> bytes:
        """The request's body (as many bytes as ``Content-Length`` says; none without it)."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def read_json(self) -> Any:
        """The request's body as JSON (an empty body is ``{}``)."""
        return json.loads(self.read_body() or b"{}")

    def send_body(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        """A whole answer: ``status``, ``data`` with its type and length, and extra ``headers``."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        """A whole answer of ``obj`` as JSON."""
        self.send_body(status, "application/json", json.dumps(obj).encode(), headers)


class LoopbackServer:
    """Serves ``handler`` on a free port of 127.0.0.1 from a daemon thread; a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, name: str | None = None) -> None:
        self.server = OwnedServer(("127.0.0.1", 0), handler)
        self.server.owner = self
        self._thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, without a path."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
