"""MCP servers an editor names over ACP (``session/new``'s ``mcpServers``) are started and their
tools are asked about in the editor like any other call."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.acp import prompt, start_monkey
from tests.support.cli import ROOT, write_script
from tests.support.script import call


async def test_an_editors_mcp_server_is_started_and_its_call_asked_in_the_editor(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from acp.schema import EnvVariable, McpServerStdio  # the SDK only where it is used: collection stays cheap

    script = write_script(tmp_path / "s.json", [{"tool_calls": [call("mcp__ed__greet", name="Zed")]}, {"text": "ok"}])
    server = McpServerStdio(
        name="ed",
        command=sys.executable,
        args=["-m", "tests.support.fakes.mcp_server", str(tmp_path / "n")],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        await conn.prompt(session_id=session.session_id, prompt=prompt("greet Zed"))
        await conn.prompt(session_id=session.session_id, prompt=prompt("/mcp"))
    [(_, asked)] = client.questions
    assert asked.title.startswith("mcp__ed__greet") or "mcp__ed__greet" in str(asked)
    done = [u for u in client.updates if u.session_update == "tool_call_update" and u.status == "completed"]
    assert done and "hello Zed" in str(done[0].content)
    said = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert "ed (editor): ready, 9 tools" in said
