"""A tool call a program asked for (an MCP client through ``monkey serve``), run as a turn of its own.

The call runs through the loop's own path (:meth:`Agent._run_call`): deny rules, the
protected set, the injected approver (the program's front end says what its approval
stands for), the checkpoint and journal before a change, the sandbox for a shell command,
and every event recorded. No model is called. The call and its result become a user
message, so a model that later goes on with this session knows what was done.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from monkey.events import Error, Event, ToolCallSpec, TurnCompleted, TurnStarted
from monkey.ids import new_id
from monkey.messages import Message

if TYPE_CHECKING:
    from monkey.events import EndReason

__all__ = ["CallHost", "RunCall", "client_turn", "context_message"]

Emit = Callable[[Event], None]
RunCall = Callable[[ToolCallSpec, int, Emit], Awaitable[Message]]
"""Runs one call through the loop's own path for a turn; returns the tool's result message."""


class CallHost(Protocol):
    """What a program's call reads and changes of the agent (:class:`monkey.agent.loop.Agent`)."""

    session_id: str
    turns: int
    messages: list[Message]


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


async def client_turn(agent: CallHost, name: str, arguments: dict[str, Any], via: str, emit: Emit,
                      run_call: RunCall) -> None:
    """Run one call of ``name`` for ``via`` (who asked, e.g. ``the MCP client claude-code``) as a turn."""
    agent.turns += 1
    turn = agent.turns
    sid = agent.session_id
    emit(TurnStarted(session_id=sid, turn=turn, prompt=f"{via}: {name}"))
    call = ToolCallSpec(id=new_id("mcp"), name=name, arguments=dict(arguments))
    reason: EndReason = "completed"
    note = ""
    try:
        result = await run_call(call, turn, emit)
        output, ok = result.content, not result.is_error
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        output, ok = "[stopped before it finished]", False
        reason, note = "cancelled", f"cancelled by {via}"
    except Exception as exc:  # a bug must end the turn with a message, never a traceback
        output, ok = f"{name} failed: {type(exc).__name__}: {exc}", False
        reason, note = "error", f"internal error: {type(exc).__name__}: {exc}"
        emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
    if not ok and reason == "completed" and output.startswith("denied: "):
        reason, note = "denied", output
    agent.messages.append(Message(role="user", content=context_message(via, name, arguments, output, ok)))
    emit(TurnCompleted(session_id=sid, turn=turn, reason=reason, result=output if ok else "",
                       iterations=0, message=note))
