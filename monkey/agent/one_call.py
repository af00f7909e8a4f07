"""One tool call run as a turn of its own, with no model call: a person's ``!command``
(:mod:`monkey.agent.person_shell`) and a program's call through ``monkey serve``
(:mod:`monkey.agent.client_call`).

The call goes through the loop's own path (``run_call``: rules, the protected set, the
approver, checkpoint and journal, the sandbox, every event recorded); the turn ends with a
user message that tells a model what was done, and ``turn_completed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from monkey.events import Error, Event, ToolCallSpec, TurnCompleted, TurnStarted
from monkey.messages import Message

if TYPE_CHECKING:
    from monkey.events import EndReason

__all__ = ["Emit", "RunCall", "TurnHost", "Ran", "run_one"]

Emit = Callable[[Event], None]
RunCall = Callable[[ToolCallSpec, int, Emit], Awaitable[Message]]
"""Runs one call through the loop's own path for a turn; returns the tool's result message."""


class TurnHost(Protocol):
    """What such a turn reads and changes of the agent (:class:`monkey.agent.loop.Agent`), named
    here by what is used so that this module does not import the loop that imports it."""

    session_id: str
    turns: int
    messages: list[Message]

    async def settle_processes(self, turn: int, emit: Emit) -> None:
        """The turn's end for its background processes' changes (see :mod:`monkey.agent.processes`)."""
        ...


@dataclass
class Ran:
    """How the call went: its output, and how the turn ends."""

    output: str
    ok: bool
    reason: EndReason = "completed"
    note: str = ""


async def run_one(
    agent: TurnHost,
    call: ToolCallSpec,
    prompt: str,
    emit: Emit,
    run_call: RunCall,
    *,
    stopped: str,
    cancelled_by: str,
    tell: Callable[[Ran], str],
    result: bool = False,
) -> Ran:
    """Run ``call`` as a turn whose prompt is ``prompt``; ``stopped`` is the output of a call
    cancelled half-way (``cancelled_by`` says by whom), ``tell`` the message a model then reads,
    ``result``: the turn's result is the call's output (when it succeeded)."""
    agent.turns += 1
    turn = agent.turns
    sid = agent.session_id
    emit(TurnStarted(session_id=sid, turn=turn, prompt=prompt))
    try:
        message = await run_call(call, turn, emit)
        ran = Ran(message.content, not message.is_error)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        ran = Ran(stopped, False, "cancelled", f"cancelled by {cancelled_by}")
    except Exception as exc:  # a bug must end the turn with a message, never a traceback
        note = f"internal error: {type(exc).__name__}: {exc}"
        ran = Ran(f"{call.name} failed: {type(exc).__name__}: {exc}", False, "error", note)
        emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
    agent.messages.append(Message(role="user", content=tell(ran)))
    await agent.settle_processes(turn, emit)
    emit(
        TurnCompleted(
            session_id=sid,
            turn=turn,
            reason=ran.reason,
            result=ran.output if result and ran.ok else "",
            iterations=0,
            message=ran.note,
        )
    )
    return ran
