"""Claude Code itself as the MCP client: ``claude -p --mcp-config FILE`` naming ``monkey serve``,
against a fake Anthropic server on 127.0.0.1 whose model calls ``mcp__monkey__file_write``.
The file is written through monkey (checkpointed, recorded) and ``monkey undo`` removes it.

The CLI is found as in tests/external/test_claude_code_e2e.py (``MONKEY_CLAUDE_CLI``, PATH,
or the copy the ``claude-agent-sdk`` wheel bundles). Claude Code refuses bypassPermissions
as root, so the call is allowed with ``--allowedTools mcp__monkey__file_write``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import invoke, monkey_env
from tests.support.fakes.anthropic_server import Answer, FakeAnthropic, Message, text_of
from tests.support.external import claude_cli

PROMPT = "please write mcp.txt through monkey"
CONTENT = "written by Claude Code through monkey\n"


class FakeModel(FakeAnthropic):
    """The fake Anthropic API; a prompt asking to write through monkey gets a call of monkey's file_write,
    a path escape, then (with both results back) an answer quoting them."""

    def reply(self, body: dict[str, Any]) -> Answer:
        messages = body.get("messages") or []
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if not body.get("tools") or not any("through monkey" in text_of(m.get("content")) for m in users):
            return super().reply(body)
        results = [
            b
            for m in users
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        self.count += 1
        if not results:
            return Message(
                "Writing it with monkey.",
                [
                    (f"toolu_w{self.count}", "mcp__monkey__file_write", {"path": "mcp.txt", "content": CONTENT}),
                    (f"toolu_x{self.count}", "mcp__monkey__file_write", {"path": "../escaped.txt", "content": "x"}),
                ],
                message_id=f"msg_fake{self.count}",
            )
        said = " | ".join(
            text_of(r.get("content")) if isinstance(r.get("content"), list) else str(r.get("content")) for r in results
        )
        return Message(f"Results: {said}", message_id=f"msg_fake{self.count}")


def test_claude_code_writes_a_file_through_monkey_serve(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    cli = claude_cli()
    cli_home = tmp_path / "cli-home"
    cli_home.mkdir()
    env = monkey_env(monkey_home)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "monkey": {
                        "command": sys.executable,
                        "args": ["-m", "monkey", "serve", "--cwd", str(workspace)],
                        "env": {"MONKEY_HOME": env["MONKEY_HOME"], "PYTHONPATH": env["PYTHONPATH"]},
                    }
                }
            }
        )
    )
    with FakeModel(str(workspace)) as server:
        cli_env = {
            **env,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "ANTHROPIC_BASE_URL": server.url,
            "HOME": str(cli_home),
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "MCP_TIMEOUT": "60000",
            "ENABLE_TOOL_SEARCH": "false",
        }  # MCP tools offered to the model directly, not deferred
        run = subprocess.run(
            [
                cli,
                "-p",
                PROMPT,
                "--mcp-config",
                str(config),
                "--strict-mcp-config",
                "--allowedTools",
                "mcp__monkey__file_write",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
            cwd=workspace,
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        tools_offered = [t["name"] for r in server.main_requests() for t in r["body"]["tools"]]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    init = next(line for line in lines if line.get("type") == "system" and line.get("subtype") == "init")
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("monkey", "connected")], init["mcp_servers"]
    assert "mcp__monkey__file_write" in tools_offered and "mcp__monkey__shell_execute" in tools_offered, (
        tools_offered,
        run.stdout[-4000:],
    )
    assert (workspace / "mcp.txt").read_text() == CONTENT
    assert not (tmp_path / "escaped.txt").exists()
    result = next(line for line in lines if line.get("type") == "result")
    assert "created mcp.txt" in result["result"], result["result"]
    assert "outside the workspace" in result["result"], result["result"]

    (session,) = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    assert session["turns"] == 2 and "claude-code" in session["title"], session
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert "mcp.txt: removed" in undo.stdout
    assert not (workspace / "mcp.txt").exists()
