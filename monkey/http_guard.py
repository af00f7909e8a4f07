"""What monkey's two HTTP servers (``monkey serve http``, ``monkey web``) check on every request,
and how they bind: one copy of the ``Host`` / ``Origin`` rules and the listening socket.

- :func:`host_part` reads a ``Host`` header's host; :class:`HostCheck` says whether a ``Host``
  (DNS rebinding) and an ``Origin`` (a page of another site) are allowed for the bound address.
- :func:`refuse` answers an ASGI request with a JSON error; :func:`bind` makes the listening
  socket (port 0: a free one); :func:`base_url` names it.

A leaf: the standard library only.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["HostCheck", "base_url", "bind", "host_part", "is_loopback_name", "refuse", "stop_uvicorn"]


def host_part(value: str) -> str:
    """The host of a ``Host`` header's value (``name``, ``name:port``, ``[v6]:port``), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_loopback_name(host: str) -> bool:
    """``localhost``, ``*.localhost`` or a loopback address."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostCheck:
    """The ``Host`` and ``Origin`` rules for a server bound to ``bound`` (the ``--host`` given).

    ``any_address``: a ``Host`` that is any IP address is allowed too (a page cannot rebind a
    name to one: its origin would be that address); ``monkey serve`` allows it for clients
    that name the machine by address; ``monkey web`` does not (the Host must name the bound
    address, or a loopback name when it is bound to loopback).
    """

    bound: str
    any_address: bool = True

    @property
    def name(self) -> str:
        return self.bound.strip("[]").lower()

    def _allowed(self, host: str) -> bool:
        if not host:
            return False
        if host == self.name:
            return True
        if is_loopback_name(host):
            return self.any_address or is_loopback_name(self.name) or self.name in ("0.0.0.0", "::")
        if self.any_address:
            return _is_address(host)
        return self.name in ("0.0.0.0", "::") and _is_address(host)

    def host_allowed(self, header: str) -> bool:
        """Whether a ``Host`` header's value names this server."""
        return self._allowed(host_part(header))

    def origin_allowed(self, origin: str) -> bool:
        """Whether an ``Origin`` header's value is this server's kind of origin (``http(s)://`` an allowed host)."""
        try:
            parts = urlsplit(origin.strip())
            host = (parts.hostname or "").lower()
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not host:
            return False
        return host == self.name or (is_loopback_name(host) and self._allowed(host))


async def refuse(send: Any, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer an ASGI HTTP request with ``status`` and a JSON ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                *(extra or []),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """The listening socket on ``host``:``port`` (port 0: a free one); OSError says why not."""
    name = host.strip("[]")
    infos = socket.getaddrinfo(name, port, socket.AF_INET6 if ":" in name else 0, socket.SOCK_STREAM)
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


def base_url(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a bound socket."""
    address = sock.getsockname()
    host = f"[{address[0]}]" if sock.family == socket.AF_INET6 else address[0]
    return f"http://{host}:{address[1]}"


def stop_uvicorn(server: Any) -> bool:
    """Ask a running uvicorn server to stop: after its open requests the first time, at once the
    second. False when none runs yet (the caller then stops it as soon as it starts)."""
    if server is None:
        return False
    if server.should_exit:
        server.force_exit = True
    else:
        server.should_exit = True
    return True
