"""monkey's tools as MCP tool definitions: name, description, JSON schema and annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monkey.tools.base import Tool

__all__ = ["IDEMPOTENT", "OPEN_WORLD", "annotations", "definitions"]

IDEMPOTENT = frozenset({"file_write", "file_delete"})
"""Changing tools whose second identical call changes nothing more (read-only tools all are)."""
OPEN_WORLD = frozenset({"shell_execute"})
"""Tools that may reach beyond the workspace's files (a command may use the network)."""


def annotations(tool: Tool) -> dict[str, Any]:
    """The MCP hints of ``tool``, from its ``read_only`` and ``dangerous``."""
    read_only = bool(tool.read_only and not tool.dangerous)
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
        out.append(types.Tool(name=spec.name, title=spec.name.replace("_", " "), description=spec.description,
                              input_schema=spec.parameters,
                              annotations=types.ToolAnnotations.model_validate(annotations(tool))))
    return out
