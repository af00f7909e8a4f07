"""Fixtures of the tool tests: a real workspace directory and a way to call a tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monkey.tools.base import ShellSettings, ToolContext, ToolOutcome
from monkey.tools.registry import ToolRegistry
from tests.support.tools import Call


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace ``proj`` with room for siblings (``proj-evil``) beside it."""
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def outputs() -> list[tuple[str, str]]:
    """What tools streamed through ``ctx.emit_output``."""
    return []


@pytest.fixture
def ctx(ws: Path, outputs: list[tuple[str, str]]) -> ToolContext:
    """A context on ``ws`` that records streamed output, with short shell limits."""
    return ToolContext(
        workspace=ws,
        call_id="t1",
        shell=ShellSettings(timeout=10.0, kill_grace=0.5),
        emit_output=lambda stream, text: outputs.append((stream, text)),
    )


@pytest.fixture
def call(ctx: ToolContext) -> Call:
    """``await call("file_read", path="x")``: parse and run a tool as the loop does."""
    registry = ToolRegistry.default()

    async def run(name: str, context: ToolContext | None = None, **arguments: Any) -> ToolOutcome:
        tool = registry.get(name)
        return await tool.run(tool.parse(arguments), context or ctx)

    return run
