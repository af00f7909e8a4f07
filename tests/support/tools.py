"""Calling a tool as the loop does (the ``call`` fixture of tests/tools), and files to call it on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from monkey.tools.base import ToolOutcome

Call = Callable[..., Awaitable[ToolOutcome]]
"""``await call("file_read", path="x")``: parse and run a tool."""


def make(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative path: text) under ``root``, making their folders."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
