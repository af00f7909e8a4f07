"""A tool call a program asked for (an MCP client through ``monkey serve``), run as a turn of its own.

The call runs through the loop's own path (:meth:`monkey.agent.calls.CallPipeline.run`): deny rules, the
protected set, the injected approver (the program's front end says what its approval
stands for), the checkpoint and journal before a change, the sandbox for a shell command,
and every event recorded. No model is called. The call and its result become a user
message, so a model that later goes on with this session knows what was done.
"""

from __future__ import annotations

import json
from typing import Any

from monkey.agent.one_call import Emit, Ran, RunCall, run_one
from monkey.agent.one_call import TurnHost as CallHost
from monkey.events import ToolCallSpec
from monkey.ids import new_id

__all__ = ["CallHost", "RunCall", "client_turn", "context_message"]


def context_message(via: str, name: str, arguments: dict[str, Any], output: str, ok: bool) -> str:
    """What a model reads about a call a program made through monkey."""
    args = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(args) > 2000:
        args = args[:1997] + "..."
    status = "" if ok else " (it failed)"
    body = output.rstrip("\n") or "(no output)"
    if len(body) > 4000:
        body = body[:3997] + "..."
    return f"{via} ran this tool call through monkey{status}; you did not run it:\n{name} {args}\n{body}"


async def client_turn(
    agent: CallHost, name: str, arguments: dict[str, Any], via: str, emit: Emit, run_call: RunCall
) -> None:
    """Run one call of ``name`` for ``via`` (who asked, e.g. ``the MCP client claude-code``) as a turn."""
    call = ToolCallSpec(id=new_id("mcp"), name=name, arguments=dict(arguments))

    def tell(ran: Ran) -> str:
        if not ran.ok and ran.reason == "completed" and ran.output.startswith("denied: "):
            ran.reason, ran.note = "denied", ran.output  # the turn ends as denied (set before it is told)
        return context_message(via, name, arguments, ran.output, ran.ok)

    await run_one(
        agent,
        call,
        f"{via}: {name}",
        emit,
        run_call,
        stopped="[stopped before it finished]",
        cancelled_by=via,
        tell=tell,
        result=True,
    )
