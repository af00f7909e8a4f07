"""Steering a session from the browser: answering its pending approval (stored in the store's
``control`` table, where the process that runs the session picks it up, see
:mod:`monkey.session.remote`).

- ``POST /api/sessions/{id}/approvals/{call_id}`` with ``{"choice": "once" | "session" | "always"
  | "deny", "reason": "..."}``: 200 ``{"by": "web", ...}`` when this answer is the one that holds;
  409 when the call was answered first elsewhere (``by`` says where) or nothing waits for it.
- ``POST /api/sessions/{id}/cancel``: cancel the running turn; ``POST /api/sessions/{id}/mode`` with
  ``{"mode": NAME}``: switch the permission mode. Each is a request stored for the process that runs the
  session tree (a sub-agent's: its root's), which does it within about 100 ms through the session's own
  paths (:mod:`monkey.session.steer`); 202 ``{"id": ...}``, or 409 when no process runs the session.
- ``GET /api/sessions/{id}/requests/{request_id}``: what came of it (``stored``, ``done``, ``refused``,
  or ``dropped``: the process ended before it took the request).
"""

from __future__ import annotations

from typing import Any

from monkey.session.remote import CHOICES
from monkey.store.control import claim, outcome
from monkey.store.control import request as store_request
from monkey.store.lock import locked_since
from monkey.store.store import SessionInfo, SessionStore
from monkey.store.watch import live_state

__all__ = ["routes"]


async def _root(store: SessionStore, info: SessionInfo) -> tuple[str, bool]:
    """The id of the session tree's root, and whether a process holds the root (runs the tree)."""
    seen = {info.id}
    while info.parent is not None and info.parent not in seen:
        parent = await store.get(info.parent)
        if parent is None:
            break
        seen.add(parent.id)
        info = parent
    return info.id, info.status == "active" and info.owned


async def answer_approval(request: Any) -> Any:
    from starlette.responses import JSONResponse

    store: SessionStore = request.app.state.store
    info = await store.get(request.path_params["session_id"])
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("choice") not in CHOICES or not isinstance(body.get("reason", ""), str):
        return JSONResponse(
            {"error": f'send {{"choice": one of {", ".join(CHOICES)}, "reason": text}}'}, status_code=400
        )
    _, running = await _root(store, info)
    if info.parent is not None and info.status == "active":
        info.owned = running
    call_id = request.path_params["call_id"]
    pending = (await live_state(store, info)).pending
    if not any(p.get("call_id") == call_id for p in pending):
        return JSONResponse(
            {"error": "nothing waits for an answer to this call (answered, or the session ended)"}, status_code=409
        )
    answer = {"choice": body["choice"], "reason": body.get("reason", "")[:2000]}
    held = await claim(store, info.id, call_id, answer, "web")  # keyed by the session that asks
    if held["by"] != "web":
        return JSONResponse({"error": "answered first at the session's own front end", **held}, status_code=409)
    return JSONResponse(held)


async def _body(request: Any) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


async def _ask(request: Any, action: dict[str, Any]) -> Any:
    """Store ``action`` for the process that runs the session's tree: 202 with the request's id."""
    from starlette.responses import JSONResponse

    store: SessionStore = request.app.state.store
    info = await store.get(request.path_params["session_id"])
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    root, running = await _root(store, info)
    if not running:
        return JSONResponse({"error": "no monkey process runs this session now"}, status_code=409)
    rid = await store_request(store, root, action, "web")
    return JSONResponse({"id": rid, "session": root, "state": "stored", **action}, status_code=202)


async def cancel(request: Any) -> Any:
    return await _ask(request, {"action": "cancel"})


async def set_mode(request: Any) -> Any:
    from starlette.responses import JSONResponse

    from monkey.modes import MODES, ModeError, parse_mode

    name = (await _body(request)).get("mode")
    try:
        mode = parse_mode(name) if isinstance(name, str) else None
    except ModeError:
        mode = None
    if mode is None:
        return JSONResponse({"error": f'send {{"mode": one of {", ".join(MODES)}}}'}, status_code=400)
    return await _ask(request, {"action": "mode", "mode": mode})


async def request_state(request: Any) -> Any:
    """What came of a request: ``stored`` (not taken yet), ``done``, ``refused`` (with why), ``dropped``."""
    from starlette.responses import JSONResponse

    store: SessionStore = request.app.state.store
    info = await store.get(request.path_params["session_id"])
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    root, running = await _root(store, info)
    rid = request.path_params["request_id"]
    asked, done = await outcome(store, root, rid)
    if asked is None:
        return JSONResponse({"error": "no such request"}, status_code=404)
    if done is not None:
        state, message = ("done" if done.get("ok") else "refused"), str(done.get("message", ""))
    elif running and asked["ts"] >= locked_since(store.locks, root):
        state, message = "stored", "waiting for the session's process to take it"
    else:
        state, message = "dropped", "the process that ran the session ended before it took the request"
    asked.pop("ts")
    return JSONResponse({"id": rid, "session": root, "state": state, "message": message, **asked})


def routes() -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/api/sessions/{session_id}/approvals/{call_id}", answer_approval, methods=["POST"]),
        Route("/api/sessions/{session_id}/cancel", cancel, methods=["POST"]),
        Route("/api/sessions/{session_id}/mode", set_mode, methods=["POST"]),
        Route("/api/sessions/{session_id}/requests/{request_id}", request_state, methods=["GET"]),
    ]
