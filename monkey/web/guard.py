"""The monitor's door: every request passes :class:`WebGuard` before it reaches the app.

1. ``Host`` must name the bound address (a loopback name when bound to loopback), else 403: a
   page of another site that rebinds its name to 127.0.0.1 sends its own name (DNS rebinding).
2. An ``Origin`` that is not this server's, or a state-changing request (not GET/HEAD) without
   this server's exact origin, is refused with 403 (CSRF).
3. ``?token=TOKEN`` (the one-time token printed with the URL) is traded once for a random
   cookie (HttpOnly, SameSite=Strict) and the browser is sent on without it; the token is then
   spent. Every other request must carry a cookie this server gave, else 401.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any
from urllib.parse import parse_qsl, urlencode

from monkey.http_guard import HostCheck, refuse

__all__ = ["COOKIE", "WebGuard"]

COOKIE = "monkey_web"
SAFE_METHODS = ("GET", "HEAD")


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name and name not in out:
            out[name] = value
    return out


class WebGuard:
    """ASGI middleware: Host (403), Origin (403), then the token or the cookie (401)."""

    def __init__(self, app: Any, bound: str, token: str) -> None:
        self.app = app
        self.check = HostCheck(bound, any_address=False)
        self.token: str | None = token
        """The one-time token; None once it was traded for a cookie."""
        self.cookies: set[str] = set()
        """The cookie values this server gave."""
        self.stopping: Any = None
        """Set when the server stops (ends the event streams); see :func:`monkey.web.server.build_app`."""

    def trade(self, given: str) -> str | None:
        """A new cookie value for the one-time token, or None (a wrong or spent token)."""
        if self.token is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        self.token = None
        cookie = secrets.token_urlsafe(32)
        self.cookies.add(cookie)
        return cookie

    def _known(self, value: str) -> bool:
        return any(hmac.compare_digest(value.encode(), c.encode()) for c in self.cookies)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers") or []:
            headers.setdefault(name.lower(), value)
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.check.host_allowed(host):
            return await refuse(send, 403, b'{"error": "forbidden: the Host header names another site"}')
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not self.check.origin_allowed(origin):
            return await refuse(send, 403, b'{"error": "forbidden: a request from another origin"}')
        cross = (
            origin.rstrip("/") != f"http://{host}" or headers.get(b"sec-fetch-site", b"same-origin") != b"same-origin"
        )
        if scope["method"] not in SAFE_METHODS and cross:
            return await refuse(send, 403, b'{"error": "forbidden: a change must come from this page (Origin)"}')
        cookie = _cookies(headers.get(b"cookie", b"").decode("latin-1")).get(COOKIE, "")
        has_cookie = bool(cookie) and self._known(cookie)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and scope["method"] in SAFE_METHODS:
            new = None if has_cookie else self.trade(given[0])
            if new is None and not has_cookie:
                return await refuse(
                    send,
                    401,
                    b'{"error": "unauthorized: this token is wrong or was used already; '
                    b'restart monkey web for a new link"}',
                )
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            out = [
                (b"location", location.encode("latin-1")),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
                (b"content-length", b"0"),
            ]
            if new is not None:
                out.append((b"set-cookie", f"{COOKIE}={new}; HttpOnly; SameSite=Strict; Path=/".encode()))
            await send({"type": "http.response.start", "status": 303, "headers": out})
            return await send({"type": "http.response.body", "body": b""})
        if not has_cookie:
            return await refuse(
                send, 401, b'{"error": "unauthorized: open the link monkey web printed (url: ...?token=...)"}'
            )
        await self.app(scope, receive, send)
