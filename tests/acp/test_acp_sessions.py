"""``monkey acp``: cancel, session/load and session/list, slash commands, attachments, bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.acp import prompt, start_monkey, text_of
from tests.support.cli import invoke_async, write_script


def _args(script: Path) -> tuple[str, ...]:
    return ("--backend", "scripted", "--script", str(script))


async def test_cancel_during_a_slow_turn(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    from acp import RequestError

    script = write_script(
        tmp_path / "s.json", [{"text": "one two three four five six seven eight nine ten " * 20, "delay": 0.2}]
    )
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt("talk slowly")))
        await client.wait_for(lambda u: u.session_update == "agent_message_chunk")
        with pytest.raises(RequestError) as busy:  # one turn at a time in a session
            await conn.prompt(session_id=session.session_id, prompt=prompt("and another thing"))
        await conn.cancel(session_id=session.session_id)
        reply = await asyncio.wait_for(turn, 30)
        assert "already running" in str(busy.value.data)
        # the session goes on after a cancel
        again = await conn.prompt(session_id=session.session_id, prompt=prompt("/approvals"))
    assert reply.stop_reason == "cancelled"
    assert again.stop_reason == "end_turn"
    shown = await invoke_async(["sessions", "export", session.session_id], home=monkey_home)
    assert '"reason":"cancelled"' in shown.stdout


async def test_cancel_while_a_question_waits(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]}, {"text": "x"}],
    )
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        never = asyncio.get_running_loop().create_future()
        client.before_answer = lambda: never  # the editor's question stays open until the cancel
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt("write a.txt")))
        await asyncio.wait_for(client.asked.wait(), 30)
        await conn.cancel(session_id=session.session_id)
        reply = await asyncio.wait_for(turn, 30)
    assert reply.stop_reason == "cancelled"
    assert not (workspace / "a.txt").exists()


async def test_load_replays_a_stored_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "I'll write it.",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}],
            },
            {"text": "Written."},
        ],
    )
    stored = await invoke_async(
        [
            "agent",
            *_args(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "write a.txt",
        ],
        home=monkey_home,
    )
    assert stored.returncode == 0, stored.stderr
    session_id = stored.of_type("session_started")[0]["session_id"]
    later = write_script(tmp_path / "later.json", [{"text": "Still here."}])
    async with start_monkey(monkey_home, *_args(later)) as (conn, client, _):
        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].title
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = list(client.updates)
        reply = await conn.prompt(session_id=session_id, prompt=prompt("are you there?"))
    kinds = [u.session_update for u in replayed if u.session_update != "available_commands_update"]
    assert kinds == [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert replayed[0].content.text == "write a.txt"
    assert text_of(replayed) == "I'll write it.Written."
    done = replayed[3]
    assert done.status == "completed" and done.content[0].new_text == "a\n"
    assert reply.stop_reason == "end_turn"
    shown = await invoke_async(["sessions", "show", session_id], home=monkey_home)
    assert "are you there?" in shown.stdout


async def test_a_slash_command_runs_through_the_session_layer(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
            {"text": "Written."},
        ],
    )
    async with start_monkey(monkey_home, *_args(script), "--no-approval") as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "auto"
        await conn.prompt(session_id=session.session_id, prompt=prompt("write a.txt"))
        assert (workspace / "a.txt").exists()
        client.updates.clear()
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("/undo"))
        undone = text_of(client.updates)
        client.updates.clear()
        await conn.prompt(session_id=session.session_id, prompt=prompt("/nosuch"))
        unknown = text_of(client.updates)
    assert reply.stop_reason == "end_turn"
    assert undone == "undone: removed a.txt"
    assert not (workspace / "a.txt").exists()
    assert unknown == "warning: unknown command /nosuch; /help lists them"


async def test_linked_and_embedded_files_go_with_the_message(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from acp import resource_block, resource_link_block, text_block
    from acp.helpers import embedded_text_resource

    (workspace / "notes.md").write_text("remember the milk\n")
    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    async with start_monkey(monkey_home, *_args(script)) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        blocks = [
            text_block("read"),
            resource_link_block("notes.md", (workspace / "notes.md").as_uri()),
            text_block("and"),
            resource_block(embedded_text_resource((workspace / "draft.py").as_uri(), "print('unsaved')\n")),
        ]
        await conn.prompt(session_id=session.session_id, prompt=blocks)
    shown = await invoke_async(["sessions", "export", session.session_id], home=monkey_home)
    assert '<file path=\\"notes.md\\">\\nremember the milk\\n</file>' in shown.stdout
    assert "<file path=\\\"draft.py\\\">\\nprint('unsaved')\\n</file>" in shown.stdout


async def test_bad_input_gets_an_error_not_a_crash(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    from acp import RequestError

    script = write_script(tmp_path / "s.json", [{"text": "fine"}])
    async with start_monkey(monkey_home, *_args(script)) as (conn, _, process):
        with pytest.raises(RequestError) as bad_prompt:
            await conn.prompt(session_id="s-nosuch", prompt=prompt("hello"))
        with pytest.raises(RequestError) as bad_load:
            await conn.load_session(cwd=str(workspace), session_id="s-nosuch", mcp_servers=[])
        with pytest.raises(RequestError) as bad_cwd:
            await conn.new_session(cwd="relative/path", mcp_servers=[])
        with pytest.raises(RequestError) as bad_load_cwd:
            await conn.load_session(cwd="relative/path", session_id="s-nosuch", mcp_servers=[])
        with pytest.raises(RequestError) as bad_list_cwd:
            await conn.list_sessions(cwd="relative/path")
        with pytest.raises(RequestError) as missing_cwd:
            await conn.new_session(cwd=str(tmp_path / "gone"), mcp_servers=[])
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as bad_mode:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        await conn.cancel(session_id="s-nosuch")  # a notification: nothing to answer, nothing breaks
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("still alive?"))
        assert process.returncode is None
    assert bad_prompt.value.code == -32602 and "no open session" in str(bad_prompt.value.data)
    assert bad_load.value.code == -32602 and "s-nosuch" in str(bad_load.value.data)
    assert "absolute" in str(bad_cwd.value.data)
    assert bad_load_cwd.value.code == bad_list_cwd.value.code == -32602
    assert "not a directory" in str(missing_cwd.value.data)
    assert "unknown mode 'yolo'" in str(bad_mode.value.data)
    assert reply.stop_reason == "end_turn"


async def test_an_editors_mcp_server_that_cannot_start_is_said_and_the_session_goes_on(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from acp.schema import McpServerStdio

    script = write_script(tmp_path / "s.json", [{"text": "fine"}])
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        server = McpServerStdio(name="files", command="mcp-files", args=[], env=[])
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("hi"))
        await conn.prompt(session_id=session.session_id, prompt=prompt("/mcp"))
    assert reply.stop_reason == "end_turn"
    said = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert "files (editor): failed, 0 tools — cannot start mcp-files: no such program" in said


def test_garbage_on_stdin_is_skipped_and_unknown_methods_are_errors(monkey_home: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.support.cli import monkey_env

    script = write_script(tmp_path / "s.json", [{"text": "fine"}])
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/teleport", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": 42}}),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "monkey", "acp", *_args(script)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=monkey_env(monkey_home),
    )
    replies = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert proc.returncode == 0
    assert replies[1]["result"]["agentCapabilities"]["loadSession"] is True
    assert replies[2]["error"]["code"] == -32601
    assert replies[3]["error"]["code"] == -32602


def test_version_and_help_do_not_load_the_sdk(monkey_home: Path) -> None:
    import subprocess
    import sys

    from tests.support.cli import monkey_env

    code = (
        "import sys, contextlib, io\nfrom monkey.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])\n"
        "    with contextlib.suppress(SystemExit): main(['--help'])\n"
        "    with contextlib.suppress(SystemExit): main(['acp', '--help'])\n"
        "print(sorted(m for m in ('acp', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=monkey_env(monkey_home)
    ).stdout
    assert out.strip() == "[]"


async def test_worktree_in_an_editor_makes_it_and_says_to_open_it(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "unused"}])
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("/worktree ed"))
        said = text_of(client.updates)
        client.updates.clear()
        await conn.prompt(session_id=session.session_id, prompt=prompt("/worktree a/b"))
        bad = text_of(client.updates)
    wt = (workspace / ".monkey" / "worktrees" / "ed").resolve()
    assert wt.is_dir() and f"open a new session with the folder `{wt}` from your editor" in said
    assert bad.startswith("warning: worktree name 'a/b'")
