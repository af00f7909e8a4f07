"""An MCP server that crashes or answers with a very long result, run for real (tests/support/fakes/mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from monkey.mcp_client.config import parse_server
from monkey.mcp_client.server import McpServer
from monkey.tools.errors import ToolError

from tests.support.cli import ROOT, monkey_env
from tests.support.mcp import fake_server, results, write_servers
from tests.support.script import call


def test_the_first_call_after_a_crash_waits_for_the_restart(scripted, monkey_home: Path, tmp_path: Path) -> None:
    state = tmp_path / "starts"  # a start may take its time on a loaded machine: the call waits for it to end
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(state, startup_timeout=300)})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    run = scripted(
        [
            {"tool_calls": [call("mcp__fake__crash")]},
            {"tool_calls": [call("mcp__fake__greet", name="a")]},
            {"text": "done"},
        ]
    )
    crashed, greeted = results(run.stdout)
    assert not crashed["ok"] and "went away during the call" in crashed["output"]
    assert greeted["ok"] and "hello a (start 2)" in greeted["output"], greeted["output"]


def test_a_call_waiting_for_a_restart_is_told_how_the_restart_ended(tmp_path: Path) -> None:
    """The restart never answers (its gate stays shut) and fails once its own startup_timeout ran
    out and the attempt was cleaned up (the stuck process is stopped). The call that came meanwhile
    waits for that end and says it; it used to give up on a deadline of its own, which ran out
    during the cleanup, and said the server "is starting"."""
    definition = fake_server(tmp_path / "starts", startup_timeout=300)
    definition["env"]["FAKE_MCP_GATE"] = str(tmp_path / "gate")  # never made: only the first start answers
    config = parse_server("fake", definition, origin="user", source="t")

    async def scenario() -> str:
        server = McpServer(config, workspace=tmp_path, log=tmp_path / "fake.log", on_tools=lambda _: None)
        server.start()
        try:
            await server.ready.wait()  # bounded by the server's startup_timeout
            assert server.status == "ready", server.error
            server.config = replace(config, startup_timeout=1.0)  # what the restart gets
            with pytest.raises(ToolError, match="went away during the call"):
                await server.call("crash", {})
            with pytest.raises(ToolError) as told:
                await server.call("greet", {"name": "a"})
            return str(told.value)
        finally:
            await server.stop()

    told = asyncio.run(scenario())
    assert told == ("the MCP server fake is failed: did not answer within 1 s (startup_timeout)"), told


def test_a_result_far_over_the_cap_is_cut_as_it_arrives(scripted, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake__huge"]\n[mcp]\nresult_limit = 5000\n')
    run = scripted([{"tool_calls": [call("mcp__fake__huge", n=3_000_000)]}, {"text": "done"}])
    [result] = results(run.stdout)
    assert result["ok"] and len(result["output"]) < 6000, result["output"][-500:]
    assert "[output cut at 5,000 characters (3,000,000 characters, the whole output is saved in " in result["output"]
    saved = [Path(part.split(";")[0].rstrip(")]")) for part in result["output"].split("saved in ")[1:]]
    assert saved and all(p.is_relative_to(monkey_home) and p.read_text() == "x" * 3_000_000 for p in saved)


PEAK = """
import asyncio, json, resource, sys
from pathlib import Path

import pytest
from monkey.mcp_client.config import Servers, parse_server
from monkey.mcp_client.manager import McpManager
from monkey.tools.base import ToolContext
from monkey.tools.registry import ToolRegistry

async def main():
    tmp = Path(sys.argv[1])
    definition = json.loads(sys.argv[2])
    manager = McpManager(Servers({"fake": parse_server("fake", definition, origin="user", source="t")}),
                         workspace=tmp, home=tmp / "home", registry=ToolRegistry([]), trusted_folder=False)
    await manager.wait_ready()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = await manager.registry.get("mcp__fake__huge").run({"n": 30_000_000}, ToolContext(workspace=tmp, call_id="c"))
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    await manager.aclose()
    print(json.dumps({"grew_kb": grew, "chars": len(out.output)}))

asyncio.run(main())
"""


@pytest.mark.subprocess  # the peak memory of a process of its own
def test_a_30_mb_result_does_not_become_copies_of_itself_in_memory(tmp_path: Path) -> None:
    """The fake sends the 30 MB text twice (content and structured content): a 60 MB line. Cut as it
    arrives, monkey's peak grows by well under three times the line (it grew by ~344 MB before, ~115 MB now)."""
    definition = fake_server(tmp_path / "starts", tool_timeout=600)
    run = subprocess.run(
        [sys.executable, "-c", PEAK, str(tmp_path), json.dumps(definition)],
        cwd=ROOT,
        env=monkey_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    measured = json.loads(run.stdout)
    assert measured["chars"] < 101_000
    assert measured["grew_kb"] < 3 * 60_000_000 // 1024, measured
