"""``monkey acp`` driven by the SDK's client side: initialize, session/new, prompts with approvals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp import kinds, prompt, start_monkey, text_of
from tests.support.cli import invoke_async, write_script

WRITE = [
    {
        "thinking": "A file is wanted.",
        "text": "I'll write it.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}],
    },
    {"text": "Done: hello.txt says hi."},
]


async def test_initialize_says_what_monkey_supports(monkey_home: Path, tmp_path: Path) -> None:
    from acp import PROTOCOL_VERSION

    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, _, _):
        reply = await conn.initialize(protocol_version=PROTOCOL_VERSION)
    caps = reply.agent_capabilities
    assert reply.protocol_version == PROTOCOL_VERSION
    assert caps.load_session is True
    assert caps.prompt_capabilities.embedded_context is True
    assert caps.prompt_capabilities.image is True  # image blocks go with the message (monkey.images)
    assert caps.session_capabilities.list is not None
    assert caps.mcp_capabilities.http is True  # the editor's HTTP MCP servers are started
    assert caps.mcp_capabilities.sse is False  # the old SSE transport is not spoken
    assert reply.agent_info.name == "monkey"


def test_an_editors_sse_mcp_server_is_left_out_and_its_http_one_kept() -> None:
    from acp.schema import NewSessionRequest

    from monkey.acp.server import editor_servers

    request = NewSessionRequest.model_validate(
        {
            "cwd": "/w",
            "mcpServers": [
                {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
                {
                    "type": "http",
                    "name": "new",
                    "url": "http://127.0.0.1:9/mcp",
                    "headers": [{"name": "X-Key", "value": "v"}],
                },
                {"name": "local", "command": "server", "args": ["-q"], "env": []},
            ],
        }
    )
    assert editor_servers(request.mcp_servers) == {
        "new": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "v"}},
        "local": {"command": "server", "args": ["-q"], "env": {}},
    }


async def test_prompt_streams_and_an_approved_write_is_checkpointed(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", WRITE)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "default"
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("write hello.txt"))
        commands = await client.wait_for(lambda u: u.session_update == "available_commands_update")
    assert reply.stop_reason == "end_turn"
    assert (workspace / "hello.txt").read_text() == "hi\n"
    updates = client.updates
    assert text_of(updates) == "I'll write it.Done: hello.txt says hi."
    assert text_of(updates, "agent_thought_chunk") == "A file is wanted."
    # the call: announced pending, asked about, then in progress, then completed with its diff
    ((options, asked),) = client.questions
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert asked.kind == "edit" and asked.title == "Write hello.txt"
    assert asked.content[0].type == "diff" and asked.content[0].new_text == "hi\n"
    calls = [u for u in updates if u.session_update in ("tool_call", "tool_call_update")]
    assert [getattr(u, "status", None) for u in calls] == ["pending", "in_progress", "completed"]
    start, _, done = calls
    assert start.kind == "edit" and start.locations[0].path == str(workspace / "hello.txt")
    (diff,) = done.content
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(workspace / "hello.txt"), None, "hi\n")
    # the change went through monkey's checkpoints: monkey undo puts it back
    names = [c.name for c in commands.available_commands]
    assert "undo" in names and "approvals" in names and "exit" not in names
    undo = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "hello.txt").exists()
    # and the session is stored: monkey sessions list shows it
    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert session.session_id in listed.stdout


@pytest.mark.parametrize("answer", ["reject_once", "reject_always"])
async def test_a_rejected_write_changes_nothing(
    workspace: Path, monkey_home: Path, tmp_path: Path, answer: str
) -> None:
    script = write_script(tmp_path / "s.json", WRITE)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        client.answer = answer
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("write hello.txt"))
    assert reply.stop_reason == "end_turn"
    assert not (workspace / "hello.txt").exists()
    last = [u for u in client.updates if u.session_update == "tool_call_update"][-1]
    assert last.status == "failed"
    assert "rejected" in text_of(client.updates)


async def test_allow_always_asks_once_per_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "b.txt", "content": "b\n"}}]},
            {"text": "both written"},
        ],
    )
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        client.answer = "allow_always"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("write two files"))
        approvals = await conn.prompt(session_id=session.session_id, prompt=prompt("/approvals"))
    assert len(client.questions) == 1
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
    assert approvals.stop_reason == "end_turn"
    assert "every file_write call inside the workspace" in text_of(client.updates)


async def test_no_approval_mode_runs_without_asking(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", WRITE)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="no-approval")
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("write hello.txt"))
    assert reply.stop_reason == "end_turn"
    assert client.questions == []
    assert (workspace / "hello.txt").read_text() == "hi\n"


async def test_max_iterations_is_max_turn_requests(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "list_directory", "arguments": {}}], "repeat": 3}, {"text": "x"}]
    )
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script), "--max-iterations", "2") as (
        conn,
        client,
        _,
    ):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("look around"))
    assert reply.stop_reason == "max_turn_requests"
    starts = [u for u in client.updates if u.session_update == "tool_call"]
    assert starts and all(u.kind == "read" for u in starts)
    assert "tool_call_update" in kinds(client.updates)
