"""monkey's MCP servers given to an ACP agent in ``session/new`` (the fake ACP agent, the CLI): the person's
stdio servers as the spec's stdio entries, HTTP ones only to an agent that takes them, and a project's
server only where monkey itself would start it (a trusted folder, its definition approved)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.mcp_client.config import load_servers
from monkey.mcp_client.pins import PinStore
from tests.support.acp_agents import fake_acp_exe, got
from tests.support.cli import invoke


def _configure(home: Path, exe: Path, log: Path, *, trust: bool = False, **env: str) -> None:
    (home / "config.toml").write_text(
        f"[approvals]\ntrust_project = {json.dumps(trust)}\n"
        '[mcp_servers.mine]\ncommand = "false"\nargs = ["--flag", "two words"]\n'
        '[mcp_servers.mine.env]\nTOKEN_FOR_IT = "abc"\n'
        '[mcp_servers.web]\nurl = "http://127.0.0.1:9/mcp"\n[mcp_servers.web.headers]\nX-Key = "k1"\n'
        f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n[acp_agents.fake.env]\n"
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"FAKE_LOG": str(log), **env}.items())
    )


def _given(home: Path, workspace: Path, log: Path) -> dict[str, dict]:
    if log.exists():
        log.unlink()
    run = invoke(["agent", "--backend", "acp:fake", "--task", "text", "--cwd", str(workspace)], home=home)
    assert run.returncode == 0, run.stderr
    (new,) = [m for m in got(log) if m.get("method") == "session/new"]
    return {s["name"]: s for s in new["params"]["mcpServers"]}


@pytest.mark.timeout(300)  # five runs of monkey in this process, each starting the agent
def test_the_persons_servers_are_given_and_a_projects_only_where_monkey_would_start_it(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "false", "args": ["p"]}}}))
    exe, log = fake_acp_exe(tmp_path / "bin"), tmp_path / "log.jsonl"
    _configure(monkey_home, exe, log)  # an untrusted folder, an agent without HTTP
    given = _given(monkey_home, workspace, log)
    assert given == {
        "mine": {
            "name": "mine",
            "command": "false",
            "args": ["--flag", "two words"],
            "env": [{"name": "TOKEN_FOR_IT", "value": "abc"}],
        }
    }
    _configure(monkey_home, exe, log, FAKE_MCP_HTTP="1")  # it takes HTTP: the person's HTTP server too
    given = _given(monkey_home, workspace, log)
    assert sorted(given) == ["mine", "web"]
    assert given["web"] == {
        "type": "http",
        "name": "web",
        "url": "http://127.0.0.1:9/mcp",
        "headers": [{"name": "X-Key", "value": "k1"}],
    }
    _configure(monkey_home, exe, log, trust=True)  # trusted, but nobody approved the project's definition
    assert "proj" not in _given(monkey_home, workspace, log)
    ws = workspace.resolve()
    proj = load_servers(ws, monkey_home).servers["proj"]
    pins = PinStore(monkey_home)
    pins.approve_server(pins.server_key(ws, "proj", proj.definition_hash), ws, "proj")
    given = _given(monkey_home, workspace, log)
    assert given["proj"] == {"name": "proj", "command": "false", "args": ["p"], "env": []}
    _configure(monkey_home, exe, log)  # approved once, but the folder is no longer trusted
    assert "proj" not in _given(monkey_home, workspace, log)
