"""The command line's flags as the session layer's typed request (the only place that reads them so).

``monkey agent``, ``monkey acp`` and ``monkey serve`` each have some of the flags; a flag a
command does not have is left to the workspace's config.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monkey.session.setup import SessionRequest

__all__ = ["session_request"]


def session_request(args: argparse.Namespace, **changes: Any) -> SessionRequest:
    """The :class:`~monkey.session.setup.SessionRequest` the flags in ``args`` make (``changes`` over them)."""
    from monkey.agent.budget import BUDGETS

    def flag(name: str, default: Any = None) -> Any:
        return getattr(args, name, default)

    cwd = flag("cwd")
    request = SessionRequest(
        workspace=Path(cwd) if cwd else None,
        backend=flag("backend"),
        model=flag("model"),
        local=bool(flag("local", False)),
        base_url=flag("base_url"),
        api_key=flag("api_key"),
        script=flag("script"),
        mode=flag("mode"),
        no_approval=bool(flag("no_approval", False)),
        approve_plan=flag("approve_plan") or "",
        max_iterations=flag("max_iterations"),
        compact_at=flag("compact_at"),
        budgets={name: flag(name) for name in BUDGETS},
        budget_scope=flag("budget_scope"),
        mcp_config=flag("mcp_config"),
        continue_=bool(flag("continue_", False)),
        resume=flag("resume"),
    )
    return request.but(**changes) if changes else request
