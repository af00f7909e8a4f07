"""The monitor's figures: ``GET /api/stats``, what ``monkey stats --json`` prints for the same scope, read
from the store's summary rows by :mod:`monkey.metrics.query` (the same code; no event is read).

Query: ``by`` (``day``, ``model``, ``backend``, ``tool``, ``session``; default ``day``), ``session``
(an id: that session and its sub-agents), else ``workspace`` (a folder), else every workspace (as
``monkey stats --all``), and ``since`` (``30m``, ``12h``, ``7d``, ``2w``, ``today``, a date).
"""

from __future__ import annotations

from typing import Any

__all__ = ["routes"]


async def stats(request: Any) -> Any:
    from starlette.responses import JSONResponse

    from monkey.metrics.query import GROUPINGS, Scope, compute
    from monkey.metrics.since import SinceError, parse_since
    from monkey.store.store import SessionStore, StoreError

    store: SessionStore = request.app.state.store
    query = request.query_params
    by = query.get("by", "day")
    if by not in GROUPINGS:
        return JSONResponse({"error": f"by: one of {', '.join(GROUPINGS)}"}, status_code=400)
    since = None
    if query.get("since"):
        try:
            since = parse_since(query["since"])
        except SinceError as exc:
            return JSONResponse({"error": str(exc).replace("--since", "since")}, status_code=400)
    session = query.get("session") or None
    if session is not None:
        try:
            session = (await store.find(session)).id
        except StoreError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
    scope = Scope(workspace=None if session else query.get("workspace") or None, session=session, since=since)
    report = await compute(store, scope, by)
    return JSONResponse(report.to_dict(scope))


def routes() -> list[Any]:
    from starlette.routing import Route

    return [Route("/api/stats", stats, methods=["GET"])]
