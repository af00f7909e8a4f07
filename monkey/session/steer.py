"""What ``monkey web`` asks of a running session — cancel its turn, switch its mode — done by the
process that runs the session, through the session's own paths.

The browser's request is stored in the store's ``control`` table (see :mod:`monkey.store.control`);
while a session is open its process reads the table every :data:`POLL_S` for requests stored since
it opened it. A cancel goes through :meth:`~monkey.agent.loop.Agent.cancel` (Esc's and Ctrl-C's),
the front end told as for its own keys (:attr:`~monkey.session.session.Session.interrupted`), and the
turn's end says who cancelled it; a mode goes through :func:`~monkey.session.commands.switch_mode`
(``/mode``'s), stored as ``mode_changed`` with ``by: "web"``, with its checks (the browser never
widens a session to ``auto`` it did not start in). What came of each request is stored beside it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from monkey.session.host import Host
from monkey.store.control import finish, requests_since
from monkey.store.store import StoreError

if TYPE_CHECKING:
    from monkey.session.replies import Level


class Session(Host, Protocol):
    """The running session, as steering it needs (:class:`monkey.session.session.Session`)."""

    interrupted: Callable[[str], None]
    tell: Callable[[str, Level], None]


__all__ = ["POLL_S", "follow_requests", "start"]

POLL_S = 0.1
"""How often an open session's process reads the store for requests."""
FROM = {"web": "from the browser"}


def start(session: Session) -> asyncio.Task[None]:
    """Follow the requests for ``session`` stored since this process took it (the task ends with the session)."""
    from monkey.store.lock import locked_since

    store = session.store
    since = locked_since(store.locks, session.agent.session_id) if store is not None else 0.0
    return asyncio.ensure_future(follow_requests(session, since or time.time()))


async def follow_requests(session: Session, since: float) -> None:
    """Do each request stored for the session's process at or after ``since``, in order, once."""
    done: set[str] = set()
    while True:
        await asyncio.sleep(POLL_S)
        store = session.store
        if store is None:
            return
        sid = session.agent.session_id
        try:
            asked = await requests_since(store, sid, since)
        except StoreError:
            continue
        for rid, request in asked:
            if rid in done:
                continue
            done.add(rid)
            try:
                ok, message = await _do(session, request)
            except Exception as exc:  # noqa: BLE001 - said to the browser; the session goes on taking requests
                ok, message = False, f"failed: {type(exc).__name__}: {exc}"
            try:
                await finish(store, sid, rid, ok, message)
            except StoreError:
                pass


async def _do(session: Session, request: dict[str, Any]) -> tuple[bool, str]:
    """Do one request; whether it was done, and what it did (or why not)."""
    from monkey.session.commands import switch_mode
    from monkey.session.replies import ModeChanged

    where = FROM.get(str(request.get("by", "")), "from elsewhere")
    action = request.get("action")
    if action == "cancel":
        said = f"cancelled {where}"
        if not session.agent.cancel(said=said):
            return False, "no turn is running"
        session.interrupted(said)
        return True, said
    if action == "mode":
        name = str(request.get("mode", ""))
        before = session.agent.policy.mode
        reply = await switch_mode(session, name, by=str(request.get("by", "web")))
        if isinstance(reply, ModeChanged):
            if reply.mode == before:
                return True, f"already in {reply.mode} mode"
            return True, f"mode set to {reply.mode} {where}"
        session.tell(f"{name} mode asked {where}: {reply.text}", "warning")
        return False, reply.text
    return False, f"unknown request {action!r}"
