"""Steering a session from the browser: answering its pending approval (stored in the store's
``control`` table, where the process that runs the session picks it up, see
:mod:`monkey.session.remote`).

- ``POST /api/sessions/{id}/approvals/{call_id}`` with ``{"choice": "once" | "session" | "always"
  | "deny", "reason": "..."}``: 200 ``{"by": "web", ...}`` when this answer is the one that holds;
  409 when the call was answered first elsewhere (``by`` says where) or nothing waits for it.
"""

from __future__ import annotations

from typing import Any

from monkey.session.remote import CHOICES
from monkey.store.control import claim
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
        return JSONResponse({"error": f"send {{\"choice\": one of {', '.join(CHOICES)}, \"reason\": text}}"},
                            status_code=400)
    _, running = await _root(store, info)
    if info.parent is not None and info.status == "active":
        info.owned = running
    call_id = request.path_params["call_id"]
    pending = (await live_state(store, info)).pending
    if not any(p.get("call_id") == call_id for p in pending):
        return JSONResponse({"error": "nothing waits for an answer to this call (answered, or the session ended)"},
                            status_code=409)
    answer = {"choice": body["choice"], "reason": body.get("reason", "")[:2000]}
    held = await claim(store, info.id, call_id, answer, "web")  # keyed by the session that asks
    if held["by"] != "web":
        return JSONResponse({"error": "answered first at the session's own front end", **held}, status_code=409)
    return JSONResponse(held)


def routes() -> list[Any]:
    from starlette.routing import Route

    return [Route("/api/sessions/{session_id}/approvals/{call_id}", answer_approval, methods=["POST"])]
