"""``monkey serve http``: the same MCP server over streamable HTTP (the SDK's transport, run by uvicorn).

- ``POST/GET/DELETE /mcp`` is the MCP endpoint; ``GET /health`` answers ``{"status": "ok", ...}``.
- It binds 127.0.0.1 unless ``--host`` names another address. Every request, ``/health``
  included and on loopback too (another user of the machine can connect there), must carry
  ``Authorization: Bearer TOKEN``: ``--token``, else ``$MONKEY_SERVE_TOKEN``, else one made
  at start and printed once on stderr (``token: ...``).
- Every request's ``Host`` must name a loopback address (``127.x``, ``localhost``, ``[::1]``),
  an IP address, or the ``--host`` given, and an ``Origin``, when sent, a loopback address or
  that host; else 403 (a page of another site reaching the port through DNS rebinding, or a
  browser's cross-site request).
- On start it prints ``url: http://HOST:PORT/mcp`` on stdout; logs go to stderr. SIGTERM or SIGINT ends it: uvicorn
  stops taking requests, the
  session is closed.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from typing import Any

from monkey.http_guard import HostCheck, base_url, bind, refuse
from monkey.mcp_server.host import ToolHost
from monkey.mcp_server.log import log

__all__ = ["HttpFront", "HttpSettings", "TOKEN_ENV"]

TOKEN_ENV = "MONKEY_SERVE_TOKEN"


@dataclass(frozen=True)
class HttpSettings:
    host: str
    port: int
    token: str
    """The bearer token every request must carry."""
    generated: bool = False
    """The token was made here (so it is printed)."""

    @classmethod
    def from_flags(
        cls, host: str | None, port: int, token: str | None, env: dict[str, str] | None = None
    ) -> HttpSettings:
        """The settings ``--host``, the port and ``--token`` give; ValueError with the reason."""
        env = dict(os.environ) if env is None else env
        chosen = host or "127.0.0.1"
        given = token if token is not None else env.get(TOKEN_ENV, "")
        if token is not None and not token.strip():
            raise ValueError("--token is empty")
        if given and (len(given) < 16 or any(c.isspace() for c in given)):
            raise ValueError("the token must be at least 16 characters, without spaces")
        if given:
            return cls(chosen, port, given)
        return cls(chosen, port, secrets.token_urlsafe(32), generated=True)


class _Guard:
    """ASGI middleware in front of every HTTP request: ``Host`` and ``Origin`` (403), then the token (401).

    ``Host`` may be a loopback name or address, any IP address (a page cannot rebind a name to
    one: its origin would be that address), or the name the server was bound to; ``Origin``, when
    a browser sends one, only a loopback one or the bound name's (:class:`monkey.http_guard.HostCheck`).
    """

    def __init__(self, app: Any, settings: HttpSettings) -> None:
        self.app = app
        self.expected = f"Bearer {settings.token}".encode()
        self.check = HostCheck(settings.host, any_address=True)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers: dict[bytes, bytes] = {}
            for name, value in scope.get("headers") or []:
                headers.setdefault(name.lower(), value)
            origin = headers.get(b"origin")
            if not self.check.host_allowed(headers.get(b"host", b"").decode("latin-1")):
                return await refuse(send, 403, b'{"error": "forbidden: the Host header names another site"}')
            if origin is not None and not self.check.origin_allowed(origin.decode("latin-1")):
                return await refuse(send, 403, b'{"error": "forbidden: a request from another origin"}')
            if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
                return await refuse(
                    send,
                    401,
                    b'{"error": "unauthorized: send Authorization: Bearer TOKEN"}',
                    [(b"www-authenticate", b'Bearer realm="monkey serve"')],
                )
        await self.app(scope, receive, send)


def build_app(host: ToolHost, settings: HttpSettings) -> Any:
    """The ASGI app: the SDK's streamable HTTP app with ``/health``, behind :class:`_Guard`."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.routing import Route

    from monkey import __version__
    from monkey.mcp_server.server import build_server

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "server": "monkey",
                "version": __version__,
                "workspace": str(host.agent.workspace),
                "session": host.session_id,
            }
        )

    server = build_server(host)
    # the SDK's own Host check knows three names and only when bound to them; the guard checks every request
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=settings.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        custom_starlette_routes=[Route("/health", health, methods=["GET"])],
    )
    return _Guard(app, settings)


def url_of(sock: socket.socket) -> str:
    return f"{base_url(sock)}/mcp"


class HttpFront:
    """One ``monkey serve http`` run: :meth:`serve` until :meth:`stop` (a signal) is called."""

    def __init__(self, host: ToolHost, settings: HttpSettings) -> None:
        self.host = host
        self.settings = settings
        self._server: Any = None
        self._stopping = False

    def stop(self) -> None:
        """Stop taking requests and end :meth:`serve` (a second call does not wait for open requests)."""
        from monkey.http_guard import stop_uvicorn

        if not stop_uvicorn(self._server):
            self._stopping = True

    async def serve(self) -> None:
        """Serve until stopped; raises OSError when the address cannot be bound."""
        import contextlib

        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):
                yield  # monkey serve's own handlers stop it and then close the session

        sock = bind(self.settings.host, self.settings.port)
        config = uvicorn.Config(
            build_app(self.host, self.settings),
            log_level="warning",
            lifespan="on",
            access_log=False,
            timeout_graceful_shutdown=5,
        )
        self._server = Server(config)
        self._server.should_exit = self._stopping
        if self.settings.generated:
            sys.stderr.write(f"token: {self.settings.token}\n")
            sys.stderr.flush()
        sys.stdout.write(f"url: {url_of(sock)}\n")
        sys.stdout.flush()
        log(f"serving {url_of(sock)} for {self.host.agent.workspace} (bearer token required)")
        try:
            await self._server.serve(sockets=[sock])
        finally:
            sock.close()
