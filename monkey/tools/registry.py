"""The tools monkey offers a model, and lookup by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from monkey.messages import ToolSpec
from monkey.tools.base import Tool, ToolError
from monkey.tools.files import FileDelete, FileEdit, FileRead, FileWrite, ListDirectory
from monkey.tools.process_tools import ProcessList, ProcessOutput, ProcessStop
from monkey.tools.search import GlobSearch, GrepSearch
from monkey.tools.shell import ShellExecute
from monkey.tools.web_fetch import WebFetch

__all__ = ["ToolRegistry", "default_tools"]


def default_tools() -> list[Tool]:
    """The built-in tools, in the order a model is shown them."""
    return [
        FileRead(),
        FileWrite(),
        FileEdit(),
        FileDelete(),
        ShellExecute(),
        ProcessOutput(),
        ProcessStop(),
        ProcessList(),
        ListDirectory(),
        GlobSearch(),
        GrepSearch(),
        WebFetch(),
    ]


class ToolRegistry:
    """A set of tools with unique names, kept in the order they were given.

    Args:
        tools: The tools; :func:`default_tools` when not given.

    Raises:
        ValueError: Two tools share a name.
    """

    def __init__(self, tools: Iterable[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self.version = 0
        """Counts changes (an MCP server's tools come and go): who caches :meth:`specs` compares it."""
        for tool in default_tools() if tools is None else tools:
            self.add(tool)

    @classmethod
    def default(cls) -> ToolRegistry:
        """A registry of the built-in tools."""
        return cls(default_tools())

    def add(self, tool: Tool) -> None:
        """Add one more tool (an MCP tool, a plugin's); its name must be new."""
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name}")
        self._tools[tool.name] = tool
        self.version += 1

    def remove(self, name: str) -> None:
        """Drop the tool called ``name`` (if there is one)."""
        if self._tools.pop(name, None) is not None:
            self.version += 1

    def get(self, name: str) -> Tool:
        """The tool called ``name``.

        Raises:
            ToolError: No tool has that name (the message lists those that do).
        """
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"unknown tool {name}; available: {', '.join(self._tools)}") from None

    def find(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def specs(self) -> list[ToolSpec]:
        """What a model is told about every tool, in order."""
        return [tool.spec() for tool in self._tools.values()]

    def names(self) -> list[str]:
        """The tool names, in order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
