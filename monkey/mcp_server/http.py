"""``monkey serve http``: the same MCP server over streamable HTTP (the SDK's transport, run by uvicorn).

- ``POST/GET/DELETE /mcp`` is the MCP endpoint; ``GET /health`` answers ``{"status": "ok", ...}``.
- It binds 127.0.0.1 unless ``--host`` names another address. A host that is not loopback
  needs a bearer token (``--token``, else ``$MONKEY_SERVE_TOKEN``, else one is generated and
  printed); when there is a token, every request, ``/health`` included, must carry
  ``Authorization: Bearer TOKEN``.
- On start it prints ``url: http://HOST:PORT/mcp`` (and ``token: ...`` when it made one) on
  stdout; logs go to stderr. SIGTERM or SIGINT ends it: uvicorn stops taking requests, the
  session is closed.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from typing import Any

from monkey.mcp_server.host import ToolHost
from monkey.mcp_server.log import log

__all__ = ["HttpFront", "HttpSettings", "is_loopback", "TOKEN_ENV"]

TOKEN_ENV = "MONKEY_SERVE_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``127.0.0.1``, ``::1``, ``localhost``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


@dataclass(frozen=True)
class HttpSettings:
    host: str
    port: int
    token: str
    """The bearer token every request must carry ('' on loopback without one)."""
    generated: bool = False
    """The token was made here (so it is printed)."""

    @classmethod
    def from_flags(cls, host: str | None, port: int, token: str | None,
                   env: dict[str, str] | None = None) -> HttpSettings:
        """The settings ``--host``, the port and ``--token`` give; ValueError with the reason."""
        env = dict(os.environ) if env is None else env
        chosen = host or "127.0.0.1"
        given = token if token is not None else env.get(TOKEN_ENV, "")
        if token is not None and not token.strip():
            raise ValueError("--token is empty")
        if given and (len(given) < 16 or any(c.isspace() for c in given)):
            raise ValueError("the token must be at least 16 characters, without spaces")
        if is_loopback(chosen):
            return cls(chosen, port, given)
        if given:
            return cls(chosen, port, given)
        return cls(chosen, port, secrets.token_urlsafe(32), generated=True)


class _RequireToken:
    """ASGI middleware: 401 for an HTTP request without ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer TOKEN"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="monkey serve"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def build_app(host: ToolHost, settings: HttpSettings) -> Any:
    """The ASGI app: the SDK's streamable HTTP app with ``/health``, behind the token when there is one."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from monkey import __version__
    from monkey.mcp_server.server import build_server

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": "monkey", "version": __version__,
                             "workspace": str(host.agent.workspace), "session": host.session_id})

    server = build_server(host)
    app = server.streamable_http_app(streamable_http_path="/mcp", host=settings.host,
                                     custom_starlette_routes=[Route("/health", health, methods=["GET"])])
    return _RequireToken(app, settings.token) if settings.token else app


def _bind(settings: HttpSettings) -> socket.socket:
    """The listening socket (port 0: a free one); OSError says why not."""
    family = socket.AF_INET6 if ":" in settings.host.strip("[]") else socket.AF_INET
    infos = socket.getaddrinfo(settings.host.strip("[]"), settings.port, family if ":" in settings.host else 0,
                               socket.SOCK_STREAM)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def url_of(sock: socket.socket) -> str:
    address = sock.getsockname()
    host = f"[{address[0]}]" if sock.family == socket.AF_INET6 else address[0]
    return f"http://{host}:{address[1]}/mcp"


class HttpFront:
    """One ``monkey serve http`` run: :meth:`serve` until :meth:`stop` (a signal) is called."""

    def __init__(self, host: ToolHost, settings: HttpSettings) -> None:
        self.host = host
        self.settings = settings
        self._server: Any = None
        self._stopping = False

    def stop(self) -> None:
        """Stop taking requests and end :meth:`serve` (a second call does not wait for open requests)."""
        server = self._server
        if server is None:
            self._stopping = True
        elif server.should_exit:
            server.force_exit = True
        else:
            server.should_exit = True

    async def serve(self) -> None:
        """Serve until stopped; raises OSError when the address cannot be bound."""
        import contextlib

        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[no-untyped-def]
                yield  # monkey serve's own handlers stop it and then close the session

        sock = _bind(self.settings)
        config = uvicorn.Config(build_app(self.host, self.settings), log_level="warning", lifespan="on",
                                access_log=False, timeout_graceful_shutdown=5)
        self._server = Server(config)
        self._server.should_exit = self._stopping
        if self.settings.generated:
            sys.stdout.write(f"token: {self.settings.token}\n")
        sys.stdout.write(f"url: {url_of(sock)}\n")
        sys.stdout.flush()
        log(f"serving {url_of(sock)} for {self.host.agent.workspace}"
            + (" (bearer token required)" if self.settings.token else ""))
        try:
            await self._server.serve(sockets=[sock])
        finally:
            sock.close()
