"""The monitor's app and server: :func:`build_app` (the API, the pages, behind the guard) and
:class:`WebFront` (uvicorn on a socket bound to 127.0.0.1, or ``--host``)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monkey.http_guard import base_url, bind

__all__ = ["STATIC", "WebFront", "WebSettings", "build_app"]

STATIC = Path(__file__).with_name("static")
"""The pages, their style sheet and scripts: shipped in the package, nothing from the internet."""
_PAGES = {"/": "sessions.html", "/session": "session.html", "/stats": "stats.html"}
_SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@dataclass(frozen=True)
class WebSettings:
    host: str = "127.0.0.1"
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    """The one-time token in the printed link."""
    database: Path | None = None
    """The store's file (default: the monkey home's)."""


def build_app(settings: WebSettings, stopping: asyncio.Event | None = None) -> Any:
    """The ASGI app: the API (:mod:`monkey.web.api`) and the pages, behind :class:`~monkey.web.guard.WebGuard`.

    ``stopping``, once set, ends the event streams (the server is stopping); the lifespan sets it too.
    """
    from starlette.applications import Starlette
    from starlette.responses import FileResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from monkey.store.store import SessionStore
    from monkey.web.api import routes
    from monkey.web.control import routes as control_routes
    from monkey.web.guard import WebGuard
    from monkey.web.stats import routes as stats_routes
    from monkey.web.undo import routes as undo_routes

    def page(name: str) -> Any:
        async def handler(request: Any) -> Any:
            return FileResponse(STATIC / name, media_type="text/html", headers=_SECURITY_HEADERS)

        return handler

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        app.state.store = await SessionStore.open(settings.database)
        app.state.stopping.clear()
        try:
            yield
        finally:
            app.state.stopping.set()
            await app.state.store.close()

    pages = [Route(path, page(name), methods=["GET"]) for path, name in _PAGES.items()]
    app = Starlette(
        routes=[
            *routes(),
            *control_routes(),
            *undo_routes(),
            *stats_routes(),
            *pages,
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=lifespan,
    )
    guard = WebGuard(_Headers(app), settings.host, settings.token)
    guard.stopping = app.state.stopping = stopping or asyncio.Event()
    return guard


class _Headers:
    """Adds the security headers (a strict Content-Security-Policy: no inline script runs) to every answer."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.encode(), v.encode())
                    for k, v in _SECURITY_HEADERS.items()
                    if k.encode() not in names and k != "cache-control"
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, sending)


class WebFront:
    """One ``monkey web`` run: :meth:`serve` until :meth:`stop`."""

    def __init__(self, settings: WebSettings, *, open_browser: bool = False, say: Any = None, app: Any = None) -> None:
        self.settings = settings
        self.app = app if app is not None else build_app(settings)
        self.stopping: asyncio.Event = self.app.stopping
        """The app; another front given it serves the same cookies (a restart on the same port)."""
        self.open_browser = open_browser
        self.say = say or (lambda line: (sys.stdout.write(line + "\n"), sys.stdout.flush()))
        self.url = ""
        self._server: Any = None
        self._stopping = False

    def stop(self) -> None:
        """Stop taking requests and end the event streams (a second call does not wait for open requests)."""
        self.stopping.set()
        from monkey.http_guard import stop_uvicorn

        if not stop_uvicorn(self._server):
            self._stopping = True

    async def serve(self) -> None:
        """Serve until stopped; OSError when the address cannot be bound. The caller's signal
        handlers call :meth:`stop` (uvicorn's own are not installed)."""
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):
                yield

        sock = bind(self.settings.host, self.settings.port)
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="on", access_log=False, timeout_graceful_shutdown=2
        )
        self._server = Server(config)
        self._server.should_exit = self._stopping
        self.url = f"{base_url(sock)}/?token={self.settings.token}"
        self.say(f"url: {self.url}")
        if self.open_browser:
            import threading
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(self.url,), daemon=True).start()
        try:
            await self._server.serve(sockets=[sock])
        finally:
            sock.close()
