"""The monitor's JSON API, read from the store as other processes write it.

- ``GET /api/sessions``: every session of the monkey home (sub-agents too, with ``parent``),
  most recently active first, each with its state (running, waiting, idle, ended).
- ``GET /api/sessions/{id}``: one session, with its pending approvals and its sub-agents.
- ``GET /api/sessions/{id}/events``: its events as Server-Sent Events. Each event's SSE ``id``
  is its sequence number; ``Last-Event-ID`` (a reconnect) or ``?after=N`` starts after that
  number, replaying exactly what was missed from the store, then the stream follows the store
  live (polled by sequence number, so sessions of other processes show as they are written).
  ``?types=a,b`` keeps only those event types (the numbers stay the store's). ``?format=json``: the
  events stored so far, in one JSON answer (``{"last": N, "events": [[seq, event], ...]}``).
- ``GET /api/openapi.json``: this API's description.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from monkey.store.store import SessionInfo, SessionStore, StoreError
from monkey.store.watch import ENDED, all_sessions, events_after, live_state

__all__ = ["POLL_S", "routes"]

POLL_S = 0.05
"""How often a live stream looks for new events when it has none (the store is polled: the
writers are other processes)."""
IDLE_POLL_S = 0.5
"""How often it looks for a session that ended."""


def _store(request: Any) -> SessionStore:
    return request.app.state.store


async def session_dict(store: SessionStore, info: SessionInfo, owners: dict[str, bool]) -> dict[str, Any]:
    """A session as the API gives it (``owners``: whether each session's root process holds it)."""
    if info.parent is not None and info.status == "active":
        info.owned = owners.get(info.parent, False)  # a sub-agent runs inside its parent's process
    live = await live_state(store, info)
    return {
        "id": info.id,
        "title": info.title,
        "workspace": info.workspace,
        "backend": info.backend,
        "model": info.model,
        "state": live.state,
        "status": info.status,
        "parent": info.parent,
        "turns": info.turns,
        "events": info.events,
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
        "tokens": info.input_tokens + info.output_tokens,
        "cost_usd": info.cost_usd,
        "created": info.created,
        "updated": info.updated,
        "pending": live.pending,
    }


async def _owners(store: SessionStore, infos: list[SessionInfo]) -> dict[str, bool]:
    known = {i.id: i for i in infos}

    def root_owned(info: SessionInfo) -> bool:
        seen = set()
        while info.parent is not None and info.parent not in seen:
            seen.add(info.id)
            parent = known.get(info.parent)
            if parent is None:
                return False
            info = parent
        return info.status == "active" and info.owned

    return {i.id: root_owned(i) for i in infos}


async def list_sessions(request: Any) -> Any:
    from starlette.responses import JSONResponse

    store = _store(request)
    infos = await all_sessions(store)
    owners = await _owners(store, infos)
    workspace = request.query_params.get("workspace")
    state = request.query_params.get("state")
    out = []
    for info in infos:
        if workspace and info.workspace != workspace:
            continue
        item = await session_dict(store, info, owners)
        if state and item["state"] != state:
            continue
        out.append(item)
    return JSONResponse({"sessions": out})


async def _one(request: Any) -> tuple[SessionStore, SessionInfo | None]:
    store = _store(request)
    return store, await store.get(request.path_params["session_id"])


async def get_session(request: Any) -> Any:
    from starlette.responses import JSONResponse

    store, info = await _one(request)
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    infos = [info]
    parent = info
    while parent.parent is not None and (up := await store.get(parent.parent)) is not None and up not in infos:
        infos.append(up)
        parent = up
    children = await store.children(info.id)
    owners = await _owners(store, infos + children)
    item = await session_dict(store, info, owners)
    item["children"] = [await session_dict(store, c, owners) for c in children]
    return JSONResponse(item)


def _after(request: Any) -> int | None:
    """Where a stream starts: ``Last-Event-ID`` (a reconnect), else ``?after=``, else 0; None: not a number."""
    given = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        after = int(given)
    except ValueError:
        return None
    return max(after, 0)


async def follow(
    store: SessionStore, session_id: str, after: int, types: frozenset[str], stop: asyncio.Event | None = None
) -> AsyncIterator[list[tuple[int, str, bytes]]]:
    """The session's events after ``after`` from the store, then live as they are stored (forever,
    or until ``stop`` is set), in batches: what one read of the store found."""
    last = after
    ended = False
    while stop is None or not stop.is_set():
        try:
            rows = await events_after(store, session_id, last)
        except StoreError:
            rows = []
        if rows:
            last = rows[-1][0]
            ended = ended or any(kind == "session_ended" for _, kind, _ in rows)
            kept = [row for row in rows if not types or row[1] in types]
            if kept:
                yield kept
        if not rows:
            info = None if ended else await store.get(session_id)
            ended = ended or info is None or (await live_state(store, info)).state == ENDED
            await asyncio.sleep(IDLE_POLL_S if ended else POLL_S)
        elif len(rows) < 2000:
            await asyncio.sleep(POLL_S / 5)  # let a burst gather: fewer, larger reads


async def session_events(request: Any) -> Any:
    from sse_starlette.sse import EventSourceResponse
    from starlette.responses import JSONResponse

    store, info = await _one(request)
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    after = _after(request)
    if after is None:
        return JSONResponse({"error": "Last-Event-ID and after are event numbers"}, status_code=400)
    types = frozenset(t for t in request.query_params.get("types", "").split(",") if t)
    if request.query_params.get("format") == "json":
        return await _stored_now(store, info.id, after, types)

    async def stream() -> AsyncIterator[bytes]:
        # one write per read of the store (a replay of thousands of events is a few writes, not one each);
        # a stored event is one line of JSON, so it is one data field as it is
        async for rows in follow(store, info.id, after, types, request.app.state.stopping):
            yield b"".join(b"id: %d\r\ndata: %s\r\n\r\n" % (seq, data) for seq, _, data in rows)

    return EventSourceResponse(stream(), ping=15, headers={"cache-control": "no-store"})


async def _stored_now(store: SessionStore, session_id: str, after: int, types: frozenset[str]) -> Any:
    """``?format=json``: the events stored so far after ``after``, in one answer (a page draws a long
    session's past at once, then follows the stream from ``last``): ``{"last": N, "events": [[seq, event]...]}``."""
    from starlette.responses import Response

    parts: list[bytes] = []
    last = after
    while True:
        rows = await events_after(store, session_id, last)
        if not rows:
            break
        last = rows[-1][0]
        parts += [b"[%d,%s]" % (seq, data) for seq, kind, data in rows if not types or kind in types]
    body = b'{"last":%d,"events":[%s]}' % (last, b",".join(parts))
    return Response(body, media_type="application/json", headers={"cache-control": "no-store"})


async def openapi(request: Any) -> Any:
    from starlette.responses import JSONResponse

    from monkey.web.openapi import spec

    return JSONResponse(spec())


def routes() -> list[Any]:
    """The API's routes."""
    from starlette.routing import Route

    return [
        Route("/api/sessions", list_sessions, methods=["GET"]),
        Route("/api/sessions/{session_id}", get_session, methods=["GET"]),
        Route("/api/sessions/{session_id}/events", session_events, methods=["GET"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
    ]
