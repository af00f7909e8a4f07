"""Fetching one web page for ``web_fetch``: where a request may go, and what it sends.

A request goes only to public addresses: every address a host name resolves to is checked
when the connection is made (not before, so a name that resolves again to ``127.0.0.1`` after
the check cannot reach it), and a private, loopback, link-local or reserved address is refused
unless an allow rule names the host (``web_fetch(domain:localhost)``). Redirects are followed
by hand, each hop checked the same way. Nothing of the person's is sent: no cookies, no
credentials, no proxy or ``.netrc`` from the environment, and no URL holding a secret of
monkey's environment or a token with a provider's well-known prefix.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from monkey.tools.errors import ToolError

__all__ = ["FETCH_TIMEOUT", "MAX_BYTES", "MAX_REDIRECTS", "Fetched", "blocked_address", "fetch", "host_of"]

MAX_BYTES = 5 << 20
"""Bytes of a response body read at most (the rest is not downloaded)."""
MAX_REDIRECTS = 5
FETCH_TIMEOUT = 20.0
"""Seconds to connect and between bytes received."""
USER_AGENT = "monkey-web-fetch (+https://github.com/monkey-agent)"


@dataclass(frozen=True)
class Fetched:
    """One response: the final URL after redirects, its status, type and body (at most :data:`MAX_BYTES`)."""

    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool


def host_of(url: str) -> str:
    """The host a URL names, lower case, without brackets (``""`` for none)."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def blocked_address(address: str) -> str | None:
    """Why a request must not go to ``address`` without a rule (``"a loopback address"``), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, flag in (
        ("a loopback", ip.is_loopback),
        ("a private", ip.is_private),
        ("a link-local", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("an unspecified", ip.is_unspecified),
        ("a reserved", ip.is_reserved),
    ):
        if flag:
            return f"{kind} address ({ip})"
    if not ip.is_global:  # shared (100.64/10), documentation, benchmarking... ranges
        return f"a non-public address ({ip})"
    return None


def check_url(url: str, secrets: Iterable[str]) -> str:
    """The URL, checked: http or https, a host, no user or password, no secret in it (raises ToolError)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ToolError(f"web_fetch: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ToolError(f"web_fetch: only http and https URLs are fetched, not {parts.scheme or 'a bare path'!r}")
    if not parts.hostname:
        raise ToolError("web_fetch: the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise ToolError("web_fetch: a URL with a user name or password is not fetched (monkey sends no credentials)")
    for secret in secrets:
        if secret and secret in url:
            raise ToolError("web_fetch: the URL holds a secret of monkey's environment; it is not sent")
    from monkey.process import holds_credential

    if holds_credential(url):
        raise ToolError("web_fetch: the URL holds what looks like a credential (an API token); it is not sent")
    return url


def _backend(named: Callable[[str], bool]) -> Any:
    """An httpcore network backend that checks each address when it connects."""
    import anyio
    import httpcore2

    class Guarded(httpcore2.AsyncNetworkBackend):
        def __init__(self) -> None:
            self.inner = httpcore2.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            try:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
            if not infos:
                raise httpcore2.ConnectError(f"{host} resolves to no address")
            allowed = named(host.rstrip(".").lower())
            for info in infos:
                why = blocked_address(str(info[4][0]))
                if why is not None and not allowed:
                    raise _Refused(f"{host} resolves to {why}; an allow rule web_fetch(domain:{host}) must name it")
            return await self.inner.connect_tcp(
                str(infos[0][4][0]), port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise httpcore2.ConnectError("web_fetch does not use unix sockets")

        async def sleep(self, seconds: float) -> None:
            await self.inner.sleep(seconds)

    return Guarded()


class _Refused(Exception):
    """An address no rule lets a request reach."""


def _refusal(exc: BaseException) -> str | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _Refused):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


async def fetch(
    url: str,
    *,
    named: Callable[[str], bool],
    secrets: Iterable[str] = (),
    accept: str = "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5",
) -> Fetched:
    """GET ``url`` (redirects followed by hand, each hop checked); raises ToolError with what went wrong."""
    import httpcore2
    import httpx2

    secrets = [s for s in secrets if len(s) >= 8]
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(  # the one way httpx lets a backend check addresses
        ssl_context=httpx2.create_ssl_context(), network_backend=_backend(named), max_connections=4
    )
    headers = {"User-Agent": USER_AGENT, "Accept": accept}
    async with httpx2.AsyncClient(
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        timeout=httpx2.Timeout(FETCH_TIMEOUT),
        headers=headers,
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(url, secrets)
            try:
                async with client.stream("GET", url) as response:
                    if response.is_redirect and response.headers.get("location"):
                        url = urljoin(url, response.headers["location"])
                        continue
                    body = bytearray()
                    truncated = False
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_BYTES:
                            del body[MAX_BYTES:]
                            truncated = True
                            break
                    return Fetched(
                        str(response.url),
                        response.status_code,
                        response.headers.get("content-type", ""),
                        bytes(body),
                        truncated,
                    )
            except _Refused as exc:
                raise ToolError(f"web_fetch: refused: {exc}") from None
            except httpx2.HTTPError as exc:
                why = _refusal(exc)
                if why is not None:
                    raise ToolError(f"web_fetch: refused: {why}") from None
                raise ToolError(f"web_fetch: {url}: {type(exc).__name__}: {exc or 'no answer'}") from None
        raise ToolError(f"web_fetch: more than {MAX_REDIRECTS} redirects from {url}")
