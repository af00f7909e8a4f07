"""Calling a tool as the loop does (the ``call`` fixture of tests/tools)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from monkey.tools.base import ToolOutcome

Call = Callable[..., Awaitable[ToolOutcome]]
"""``await call("file_read", path="x")``: parse and run a tool."""
