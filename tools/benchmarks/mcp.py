"""``mcp``: a tool call's round trip through monkey's MCP client against the bare ``mcp`` client.

Both talk to the same server program (the npm reference server ``mcp-server-everything``,
installed by ``npm install --prefix tests/npm``; without it, ``tests/support/fakes/mcp_server.py``), each to
its own copy started in the same run, calls interleaved: monkey's side is ``McpTool.run`` (its
stdio transport, the SDK session, the timeout, the result rendered and capped), the baseline
``mcp.Client.call_tool`` over the SDK's own stdio transport. Target: at most 1.2x (median).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
TARGET = 1.2


def _server() -> tuple[str, list[str], str, dict]:
    """The program, its arguments, the tool to call and its arguments."""
    if EVERYTHING.exists():
        return str(EVERYTHING), [], "echo", {"message": "hello"}
    state = Path(tempfile.mkdtemp(prefix="monkey-bench-mcp-")) / "starts"
    return sys.executable, ["-m", "tests.support.fakes.mcp_server", str(state)], "greet", {"name": "bench"}


def bench_mcp(runs: int = 400) -> list[dict]:
    """Median seconds of one call through monkey's MCP client and through the bare client."""
    return asyncio.run(_measure(runs))


async def _measure(runs: int) -> list[dict]:
    import os

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from monkey.mcp_client.config import Servers, parse_server
    from monkey.mcp_client.manager import McpManager
    from monkey.tools.base import ToolContext
    from monkey.tools.registry import ToolRegistry

    command, args, tool_name, arguments = _server()
    home = Path(tempfile.mkdtemp(prefix="monkey-bench-mcp-home-"))
    workspace = Path(tempfile.mkdtemp(prefix="monkey-bench-mcp-ws-"))
    servers = Servers(
        {
            "srv": parse_server(
                "srv",
                {"command": command, "args": args, "env": {"PYTHONPATH": str(ROOT)}, "cwd": str(ROOT)},
                origin="user",
                source="bench",
            )
        }
    )
    registry = ToolRegistry([])
    manager = McpManager(servers, workspace=workspace, home=home, registry=registry, trusted_folder=False)
    await manager.wait_ready()
    tool = registry.get(f"mcp__srv__{tool_name}")
    ctx = ToolContext(workspace=workspace, call_id="bench")
    parsed = tool.parse(arguments)
    bare_params = StdioServerParameters(command=command, args=args, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    ours: list[float] = []
    theirs: list[float] = []
    try:
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(bare_params, errlog=quiet), cache=None) as client:
                for _ in range(20):  # warm both up (imports, JIT of the node server)
                    await tool.run(parsed, ctx)
                    await client.call_tool(tool_name, arguments)
                for _ in range(runs):
                    start = time.perf_counter()
                    await tool.run(parsed, ctx)
                    ours.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await client.call_tool(tool_name, arguments)
                    theirs.append(time.perf_counter() - start)
    finally:
        await manager.aclose()
    mine, base = median(ours), median(theirs)
    return [
        figure(
            "mcp_tool_call",
            mine * 1000,
            "ms",
            f"bare mcp.Client.call_tool ({Path(command).name} {tool_name})",
            base * 1000,
            target=f"ratio <= {TARGET}",
            ok=mine / base <= TARGET,
            runs=runs,
            p90_ms=round(sorted(ours)[int(runs * 0.9)] * 1000, 3),
            baseline_p90_ms=round(sorted(theirs)[int(runs * 0.9)] * 1000, 3),
        )
    ]
