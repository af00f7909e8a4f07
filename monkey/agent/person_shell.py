"""``!command``: a person runs a shell command themselves, through the same path as the model's.

The command is a turn of its own with no model call, run as a ``shell_execute`` call by
the loop (:meth:`Agent._run_call`): the permission engine decides (a deny rule still
refuses it: the person can run it in their own shell, but not through monkey), a
checkpoint and a journal entry come first (so ``monkey undo`` reverts what it changed),
and the events are recorded. Typing the line is the person's approval of that exact line,
so shell syntax (pipes, ``&&``) runs. The command and its output become a user message, so
the model reads them with the person's next message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from monkey.events import Error, Event, ToolCallSpec, TurnCompleted, TurnStarted
from monkey.ids import new_id
from monkey.messages import Message

if TYPE_CHECKING:
    from monkey.events import EndReason

__all__ = ["PREFIX", "RunCall", "ShellHost", "shell_line", "context_message", "shell_turn"]

Emit = Callable[[Event], None]
RunCall = Callable[[ToolCallSpec, int, Emit], Awaitable[Message]]
"""Runs one call through the loop's own path (rules, checkpoint, journal, store) as the
person's, for a turn; returns the tool's result message."""


class ShellHost(Protocol):
    """What a person's command reads and changes of the agent (:class:`monkey.agent.loop.Agent`),
    named here by what is used so that this module does not import the loop that imports it."""

    session_id: str
    turns: int
    messages: list[Message]

PREFIX = "!"
"""A message that starts with this (and has more after it) is a command the person runs."""
SHELL_TOOL = "shell_execute"


def shell_line(text: str) -> str | None:
    """The command of a ``!command`` message, or None when ``text`` is not one."""
    text = text.strip()
    if not text.startswith(PREFIX):
        return None
    command = text[len(PREFIX):].strip()
    return command or None


def context_message(command: str, output: str, ok: bool) -> str:
    """What the model reads about a command the person ran."""
    status = "" if ok else " (it failed)"
    body = output.rstrip("\n") or "(no output)"
    return (f"I ran this shell command myself in the workspace{status}; you did not run it:\n"
            f"$ {command}\n{body}")


async def shell_turn(agent: ShellHost, command: str, emit: Emit, run_call: RunCall) -> None:
    """Run ``command`` for the person as one turn of ``agent``'s conversation.

    ``run_call`` is the agent's own call path (:meth:`Agent._run_call` with ``by_person``).
    """
    agent.turns += 1
    turn = agent.turns
    sid = agent.session_id
    emit(TurnStarted(session_id=sid, turn=turn, prompt=f"{PREFIX}{command}"))
    call = ToolCallSpec(id=new_id("sh"), name=SHELL_TOOL, arguments={"command": command})
    reason: EndReason = "completed"
    note = ""
    try:
        result = await run_call(call, turn, emit)
        output, ok = result.content, not result.is_error
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        output, ok = "[stopped by the person before it finished]", False
        reason, note = "cancelled", "cancelled by the user"
    except Exception as exc:  # a bug must end the turn with a message, never a traceback
        output, ok = f"{SHELL_TOOL} failed: {type(exc).__name__}: {exc}", False
        reason, note = "error", f"internal error: {type(exc).__name__}: {exc}"
        emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
    agent.messages.append(Message(role="user", content=context_message(command, output, ok)))
    emit(TurnCompleted(session_id=sid, turn=turn, reason=reason, result="", iterations=0, message=note))
