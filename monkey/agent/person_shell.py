"""``!command``: a person runs a shell command themselves, through the same path as the model's.

The command is a turn of its own with no model call, run as a ``shell_execute`` call by
the loop (:meth:`monkey.agent.calls.CallPipeline.run`): the permission engine decides (a deny rule still
refuses it: the person can run it in their own shell, but not through monkey), a
checkpoint and a journal entry come first (so ``monkey undo`` reverts what it changed),
and the events are recorded. Typing the line is the person's approval of that exact line,
so shell syntax (pipes, ``&&``) runs. The command and its output become a user message, so
the model reads them with the person's next message.
"""

from __future__ import annotations

from monkey.agent.one_call import Emit, RunCall, run_one
from monkey.agent.one_call import TurnHost as ShellHost
from monkey.events import ToolCallSpec
from monkey.ids import new_id

__all__ = ["PREFIX", "RunCall", "ShellHost", "shell_line", "context_message", "shell_turn"]


PREFIX = "!"
"""A message that starts with this (and has more after it) is a command the person runs."""
SHELL_TOOL = "shell_execute"


def shell_line(text: str) -> str | None:
    """The command of a ``!command`` message, or None when ``text`` is not one."""
    text = text.strip()
    if not text.startswith(PREFIX):
        return None
    command = text[len(PREFIX) :].strip()
    return command or None


def context_message(command: str, output: str, ok: bool) -> str:
    """What the model reads about a command the person ran."""
    status = "" if ok else " (it failed)"
    body = output.rstrip("\n") or "(no output)"
    return f"I ran this shell command myself in the workspace{status}; you did not run it:\n$ {command}\n{body}"


async def shell_turn(agent: ShellHost, command: str, emit: Emit, run_call: RunCall) -> None:
    """Run ``command`` for the person as one turn of ``agent``'s conversation.

    ``run_call`` is the agent's own call path (:meth:`monkey.agent.calls.CallPipeline.run` with ``by_person``).
    """
    call = ToolCallSpec(id=new_id("sh"), name=SHELL_TOOL, arguments={"command": command})
    await run_one(
        agent,
        call,
        f"{PREFIX}{command}",
        emit,
        run_call,
        stopped="[stopped by the person before it finished]",
        cancelled_by="the user",
        tell=lambda ran: context_message(command, ran.output, ran.ok),
    )
