"""Running the person's hooks from the agent: one ``hook_ran`` event per command run, and what
``PostToolUse`` hooks tell the model added to a call's result (see :mod:`monkey.extensions.hooks`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from monkey.events import Event, HookRan, ToolCallSpec
from monkey.extensions.hooks import HookResult, Hooks

__all__ = ["post_tool_output", "run_hooks"]

Emit = Callable[[Event], None]


async def run_hooks(
    hooks: Hooks | None,
    session_id: str,
    workspace: Path,
    event: str,
    emit: Emit,
    *,
    call: ToolCallSpec | None = None,
    target: str = "",
    **payload: Any,
) -> HookResult | None:
    """Run the hooks of ``event`` (for ``call``'s tool, or ``target``: a source, trigger or
    notification type), each run an event; None without hooks."""
    if not hooks:
        return None
    data: dict[str, Any] = {"session_id": session_id, "cwd": str(workspace), **payload}
    if call is not None:
        data.update(tool_name=call.name, tool_input=call.arguments)
    result = await hooks.run(event, data, tool=call.name if call is not None else target)
    for run in result.runs:
        emit(
            HookRan(
                session_id=session_id,
                hook_event=run.event,
                command=run.command,
                outcome=run.outcome,
                exit_code=run.exit_code,
                duration_ms=run.duration_ms,
                message=run.message,
                call_id=call.id if call is not None else "",
            )
        )
    return result


async def post_tool_output(
    hooks: Hooks | None, session_id: str, workspace: Path, call: ToolCallSpec, ok: bool, output: str, emit: Emit
) -> str:
    """``output`` with what ``PostToolUse`` (or ``PostToolUseFailure``) hooks tell the model."""
    event = "PostToolUse" if ok else "PostToolUseFailure"
    result = await run_hooks(
        hooks, session_id, workspace, event, emit, call=call, tool_response={"ok": ok, "output": output}
    )
    if result is None or not (result.blocked or result.context):
        return output
    said = "\n".join([*result.context, *([result.feedback] if result.blocked else [])])
    return f"{output}\n\n<hook {event}>\n{said}\n</hook>"
