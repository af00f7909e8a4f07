"""The names MCP tools have for the model: ``mcp__<server>__<tool>``.

Only ``[A-Za-z0-9_-]`` (every other character becomes ``_``), at most 64 characters (a longer
name is cut and ends in ``_`` and 8 hex digits of a hash of the whole, so two long names
stay apart). A server's name never holds ``__`` (runs of ``_`` become one), so
``mcp__server__*`` rules cannot reach into another server's tools.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["PREFIX", "MAX_LEN", "tool_name", "server_part", "server_of", "Collision", "assign_names"]

PREFIX = "mcp__"
MAX_LEN = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_RUNS = re.compile(r"_{2,}")


def server_part(server: str) -> str:
    """A server's name as it appears in tool names."""
    return _RUNS.sub("_", _BAD.sub("_", server)) or "_"


def tool_name(server: str, tool: str) -> str:
    """The model's name for ``tool`` of ``server``."""
    name = f"{PREFIX}{server_part(server)}__{_BAD.sub('_', tool) or '_'}"
    if len(name) <= MAX_LEN:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_LEN - 9]}_{digest}"


def server_of(name: str) -> str | None:
    """The server part of a model's tool name (None: not an MCP tool's name)."""
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX) :]
    server, sep, _ = rest.partition("__")
    return server if sep else None


class Collision(ValueError):
    """Two tools of a server would have the same name for the model."""


def assign_names(server: str, tools: list[str]) -> tuple[dict[str, str], list[str]]:
    """Model names for a server's tools, and one message per tool left out because its name collides.

    The first tool keeps a name; a later one with the same model name is left out (offering
    either under the other's name would call the wrong tool).
    """
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    errors: list[str] = []
    for tool in tools:
        name = tool_name(server, tool)
        if name in taken:
            errors.append(f"tools {taken[name]!r} and {tool!r} both become {name}; {tool!r} left out")
            continue
        taken[name] = tool
        names[tool] = name
    return names, errors
