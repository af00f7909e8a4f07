"""monkey's tools as MCP tool definitions: name, description, JSON schema and annotations."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monkey.tools.base import Tool

__all__ = ["ASKED_READS", "IDEMPOTENT", "OPEN_WORLD", "annotations", "definitions", "agent_definitions"]

IDEMPOTENT = frozenset({"file_write", "file_delete", "process_stop"})
"""Changing tools whose second identical call changes nothing more (read-only tools all are)."""
OPEN_WORLD = frozenset({"shell_execute", "web_fetch"})
"""Tools that may reach beyond the workspace's files (a command may use the network)."""
ASKED_READS = frozenset({"web_fetch"})
"""Tools that change nothing but are asked for (they reach the network)."""


def annotations(tool: "Tool") -> dict[str, Any]:
    """The MCP hints of ``tool``, from its ``read_only`` and ``dangerous``."""
    read_only = bool(tool.read_only and (not tool.dangerous or tool.name in ASKED_READS))
    return {
        "readOnlyHint": read_only,
        "destructiveHint": not read_only,
        "idempotentHint": read_only or tool.name in IDEMPOTENT,
        "openWorldHint": tool.name in OPEN_WORLD,
    }


def definitions(tools: Any) -> list[Any]:
    """``mcp_types.Tool`` for each tool of a registry, in its order."""
    import mcp_types as types

    out = []
    for tool in tools:
        spec = tool.spec()
        out.append(
            types.Tool(
                name=spec.name,
                title=spec.name.replace("_", " "),
                description=spec.description,
                input_schema=spec.parameters,
                annotations=types.ToolAnnotations.model_validate(annotations(tool)),
            )
        )
    return out


_TASK_OUTPUT = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "description": "The model's final answer (or why the task did not complete)."},
        "session_id": {"type": "string", "description": "The monkey session; agent_reply continues it."},
        "reason": {"type": "string", "description": "completed, denied, max_iterations, cancelled or error."},
        "message": {"type": "string", "description": "What stopped the task early, if anything."},
    },
    "required": ["result", "session_id", "reason", "message"],
}
_TASK_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def agent_definitions() -> list[Any]:
    """The ``agent`` and ``agent_reply`` tools (a whole monkey task on its configured backend)."""
    import mcp_types as types

    hints = types.ToolAnnotations.model_validate(_TASK_HINTS)
    headless = (
        "It runs headless: what monkey serve's mode and rules allow runs (start it with --mode "
        "accept-edits to let it change files), anything that would ask a person is refused and the "
        "model is told. Every change is checkpointed; `monkey undo` reverts it."
    )
    return [
        types.Tool(
            name="agent",
            title="monkey agent",
            annotations=hints,
            output_schema=_TASK_OUTPUT,
            description="Run a whole task with monkey's own agent (its configured model and tools) in the "
            f"workspace, as a new monkey session; gives back its final answer and session id. {headless}",
            input_schema={
                "type": "object",
                "additionalProperties": False,
                "required": ["prompt"],
                "properties": {"prompt": {"type": "string", "description": "The task."}},
            },
        ),
        types.Tool(
            name="agent_reply",
            title="monkey agent reply",
            annotations=hints,
            output_schema=_TASK_OUTPUT,
            description="Continue a monkey session an `agent` call started (or any stored session of this "
            f"workspace) with one more message; gives back the answer. {headless}",
            input_schema={
                "type": "object",
                "additionalProperties": False,
                "required": ["session_id", "prompt"],
                "properties": {
                    "session_id": {"type": "string", "description": "From the agent call's result."},
                    "prompt": {"type": "string", "description": "The next message."},
                },
            },
        ),
    ]
