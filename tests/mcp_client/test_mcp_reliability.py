"""An MCP server that crashes or answers with a very long result, run for real (tests/support/fakes/mcp_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT, monkey_env
from tests.support.mcp import fake_server, results, write_servers
from tests.support.script import call


def test_the_first_call_after_a_crash_waits_for_the_restart(scripted, monkey_home: Path, tmp_path: Path) -> None:
    state = tmp_path / "starts"
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(state)})
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
