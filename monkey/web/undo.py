"""Undo from the browser, with ``monkey undo``'s own code and refusals (:class:`~monkey.checkpoints.api.Checkpoints`).

- ``GET /api/sessions/{id}/checkpoints/{checkpoint}``: ``{"preview": ...}``, the change's diff as
  ``monkey checkpoints show`` prints it (what cannot be undone and what is not monkey's named first).
- ``POST /api/sessions/{id}/checkpoints/{checkpoint}/undo``: undo every change from that checkpoint
  on (``monkey undo --to``), never with ``--force``: 200 with the ``undo_applied`` event; 409 when
  a file changed since monkey's change (``conflicts``: each one's reason and diff) or nothing is left
  to undo; changes not attributable to monkey are left as they are (``left_alone``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from monkey.store.store import SessionStore

__all__ = ["routes"]


def _checkpoints(workspace: str) -> Any:
    from monkey.checkpoints.api import Checkpoints
    from monkey.config import load_config, monkey_home

    config = load_config(Path(workspace))
    return Checkpoints(Path(workspace), home=monkey_home(), max_file_size=config.checkpoints.max_file_size)


async def _target(request: Any) -> tuple[Any, str] | Any:
    """``(Checkpoints, checkpoint id)`` of a checkpoint of this session (or its sub-agents), or an error response."""
    from starlette.responses import JSONResponse

    from monkey.checkpoints.api import UndoError

    store: SessionStore = request.app.state.store
    info = await store.get(request.path_params["session_id"])
    if info is None:
        return JSONResponse({"error": "no such session"}, status_code=404)
    ids = {info.id, *(c.id for c in await store.children(info.id))}

    def find() -> tuple[Any, str] | None:
        cps = _checkpoints(info.workspace)
        entry = cps.resolve(request.path_params["checkpoint"])
        return (cps, entry.id) if entry.session_id in ids else None

    try:
        found = await asyncio.to_thread(find)
    except (UndoError, OSError, ValueError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    if found is None:
        return JSONResponse({"error": "this checkpoint is not one of this session's"}, status_code=404)
    return found


async def preview(request: Any) -> Any:
    from starlette.responses import JSONResponse

    found = await _target(request)
    if not isinstance(found, tuple):
        return found
    cps, checkpoint = found
    return JSONResponse({"checkpoint": checkpoint, "preview": await asyncio.to_thread(cps.show, checkpoint)})


async def undo(request: Any) -> Any:
    from starlette.responses import JSONResponse

    from monkey.checkpoints.api import UndoError, undo_event
    from monkey.checkpoints.gitrun import GitError
    from monkey.checkpoints.undo import UndoConflict
    from monkey.events import encode

    found = await _target(request)
    if not isinstance(found, tuple):
        return found
    cps, checkpoint = found
    try:
        outcome = await asyncio.to_thread(lambda: cps.undo(to=checkpoint, force=False))
    except UndoConflict as exc:
        return JSONResponse(
            {
                "error": f"nothing was undone: {len(exc.conflicts)} file(s) changed since monkey's change",
                "conflicts": [{"reason": c.reason, "diff": c.diff} for c in exc.conflicts],
            },
            status_code=409,
        )
    except (UndoError, GitError, OSError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=409)
    import json

    event = json.loads(encode(undo_event(outcome, request.path_params["session_id"])))
    return JSONResponse({"undone": event, "notes": list(cps.notes)})


def routes() -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/api/sessions/{session_id}/checkpoints/{checkpoint}", preview, methods=["GET"]),
        Route("/api/sessions/{session_id}/checkpoints/{checkpoint}/undo", undo, methods=["POST"]),
    ]
