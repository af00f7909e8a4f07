"""Real MCP servers for the tests: the npm reference servers (``tests/npm``) and tests/support/fakes/mcp_server.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import ROOT

NPM_BIN = ROOT / "tests" / "npm" / "node_modules" / ".bin"
EVERYTHING = NPM_BIN / "mcp-server-everything"
FILESYSTEM = NPM_BIN / "mcp-server-filesystem"

_npm_servers = pytest.mark.skipif(
    not EVERYTHING.exists() or not FILESYSTEM.exists(),
    reason="npm install --prefix tests/npm installs the MCP reference servers",
)


def needs_npm(test):  # type: ignore[no-untyped-def]
    """An ``external`` test on the npm MCP reference servers, skipped until ``npm install --prefix tests/npm`` ran."""
    return pytest.mark.external(_npm_servers(test))


def fake_server(state: Path, **extra: Any) -> dict[str, Any]:
    """The definition of tests/support/fakes/mcp_server.py counting its starts in ``state``."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.support.fakes.mcp_server", str(state)],
        "cwd": str(ROOT),
        "env": {"PYTHONPATH": str(ROOT)},
        **extra,
    }


def write_servers(path: Path, servers: dict[str, Any]) -> Path:
    """An ``mcp.json`` with these ``mcpServers``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def events(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines of a stream-json output."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def results(stdout: str) -> list[dict[str, Any]]:
    """The ``tool_result`` events of a stream-json output."""
    return [e for e in events(stdout) if e["type"] == "tool_result"]
