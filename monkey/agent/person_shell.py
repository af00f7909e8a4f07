"""``!command``: a person runs a shell command themselves, through the same path as the model's.

The command is a turn of its own with no model call. It goes through the permission
engine (a deny rule still refuses it: the person can run it in their own shell, but not
through monkey), the checkpoint and journal (so ``monkey undo`` reverts what it changed),
and the store, as ``shell_execute`` calls of the model do. Typing the line is the person's
approval of that exact line, so shell syntax (pipes, ``&&``) runs. The command and its output
become a user message, so the model reads them with the person's next message.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from monkey.events import (
    ApprovalResolved,
    Error,
    ToolCallEvent,
    ToolCallSpec,
    ToolOutput,
    ToolResult,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from monkey.ids import new_id
from monkey.messages import Message
from monkey.tools.base import ToolContext, ToolError

if TYPE_CHECKING:
    from monkey.agent.loop import Agent, Emit

__all__ = ["PREFIX", "shell_line", "context_message", "shell_turn"]

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


async def shell_turn(agent: Agent, command: str, emit: Emit) -> None:
    """Run ``command`` for the person as one turn of ``agent``'s conversation."""
    agent.turns += 1
    turn = agent.turns
    sid = agent.session_id
    emit(TurnStarted(session_id=sid, turn=turn, prompt=f"{PREFIX}{command}"))
    call_id = new_id("sh")
    arguments = {"command": command}
    emit(ToolCallEvent(session_id=sid, call_id=call_id, name=SHELL_TOOL, arguments=arguments, dangerous=True))
    started = time.perf_counter()
    ok, output, reason, note = False, "", "completed", ""
    tool = agent.tools.find(SHELL_TOOL)
    try:
        if tool is None:
            raise ToolError(f"{SHELL_TOOL} is not one of this session's tools; nothing was run")
        rule = agent.policy.check(SHELL_TOOL, arguments)
        if rule is not None and not rule.approved:  # a deny rule holds for the person's commands too
            emit(ApprovalResolved(session_id=sid, call_id=call_id, name=SHELL_TOOL, decision="denied",
                                  by=rule.by, reason=rule.reason))
            raise ToolError(f"denied: {rule.reason or 'a rule denies it'}")
        emit(ApprovalResolved(session_id=sid, call_id=call_id, name=SHELL_TOOL, decision="approved",
                              by="user", reason="typed by the person"))
        ctx = ToolContext(
            workspace=agent.workspace, call_id=call_id, shell=agent.options.shell,
            emit_output=lambda stream, text: emit(
                ToolOutput(session_id=sid, call_id=call_id, stream=stream, text=text)  # type: ignore[arg-type]
            ),
        )
        ctx.shell_line_approved = True  # the person typed this exact line
        args = tool.parse(arguments)
        tool.argv(args, ctx)  # refuses a builtin such as `cd` before a checkpoint is taken
        call = ToolCallSpec(id=call_id, name=SHELL_TOOL, arguments=arguments)
        pending = await agent._checkpoint(call, None, turn, emit) if agent.checkpoints is not None else None
        emit(ToolStarted(session_id=sid, call_id=call_id, name=SHELL_TOOL))
        ran = False
        try:
            outcome = await tool.run(args, ctx)
            ran = True
        finally:
            if pending is not None:
                await asyncio.shield(agent._checkpoint_done(pending, ran, emit))
        ok, output = True, outcome.output
    except ToolError as exc:
        output = str(exc)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        output, reason, note = "[stopped by the person]", "cancelled", "cancelled by the user"
    except Exception as exc:  # a bug must end the turn with a message, never a traceback
        output = f"{SHELL_TOOL} failed: {type(exc).__name__}: {exc}"
        reason, note = "error", f"internal error: {type(exc).__name__}: {exc}"
        emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
    emit(ToolResult(session_id=sid, call_id=call_id, name=SHELL_TOOL, ok=ok, output=output,
                    duration_ms=(time.perf_counter() - started) * 1000))
    agent.messages.append(Message(role="user", content=context_message(command, output, ok)))
    emit(TurnCompleted(session_id=sid, turn=turn, reason=reason, result="", iterations=0, message=note))

