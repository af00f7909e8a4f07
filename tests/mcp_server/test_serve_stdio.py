"""``monkey serve`` over stdio, driven by the official ``mcp`` client as a real subprocess."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.support.cli import invoke, invoke_async
from tests.support.mcp_serve import INIT, read_answer, send_line, serve_process, stdio_session, text, TOOLS


async def test_lists_monkeys_tools_with_schemas_and_annotations(workspace: Path, monkey_home: Path) -> None:
    async with stdio_session(workspace, monkey_home) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == TOOLS
    by = {t.name: t for t in listed}
    assert by["file_write"].input_schema["required"] == ["path", "content"]
    assert "relative to the workspace" in by["file_read"].description
    read, write, shell = by["file_read"].annotations, by["file_write"].annotations, by["shell_execute"].annotations
    assert (read.read_only_hint, read.destructive_hint, read.idempotent_hint, read.open_world_hint) == (
        True,
        False,
        True,
        False,
    )
    assert (write.read_only_hint, write.destructive_hint, write.idempotent_hint) == (False, True, True)
    hints = (shell.read_only_hint, shell.destructive_hint, shell.idempotent_hint, shell.open_world_hint)
    assert hints == (False, True, False, True)
    fetch = by["web_fetch"].annotations  # changes nothing, but reaches the network
    hints = (fetch.read_only_hint, fetch.destructive_hint, fetch.idempotent_hint, fetch.open_world_hint)
    assert hints == (True, False, True, True)
    stop, out = by["process_stop"].annotations, by["process_output"].annotations
    assert (stop.read_only_hint, stop.idempotent_hint, out.read_only_hint, out.open_world_hint) == (
        False,
        True,
        True,
        False,
    )


async def test_every_tool_runs_and_changes_are_recorded_and_undoable(workspace: Path, monkey_home: Path) -> None:
    async with stdio_session(workspace, monkey_home) as client:
        wrote = await client.call_tool("file_write", {"path": "notes/a.txt", "content": "alpha\nbeta\n"})
        assert not wrote.is_error, text(wrote)
        read = await client.call_tool("file_read", {"path": "notes/a.txt"})
        assert text(read) == "alpha\nbeta\n"
        edited = await client.call_tool(
            "file_edit", {"path": "notes/a.txt", "old_string": "beta", "new_string": "gamma"}
        )
        assert not edited.is_error, text(edited)
        listing = await client.call_tool("list_directory", {"path": "notes"})
        assert "a.txt" in text(listing)
        found = await client.call_tool("glob_search", {"pattern": "**/*.txt"})
        assert "notes/a.txt" in text(found)
        grep = await client.call_tool("grep_search", {"pattern": "gam+a"})
        assert "notes/a.txt:2: gamma" in text(grep)
        shell = await client.call_tool("shell_execute", {"command": "cat notes/a.txt"})
        assert not shell.is_error, text(shell)
        assert "alpha\ngamma" in text(shell)
        (workspace / "gone.txt").write_text("bye\n")
        deleted = await client.call_tool("file_delete", {"path": "gone.txt"})
        assert not deleted.is_error, text(deleted)
    assert (workspace / "notes/a.txt").read_text() == "alpha\ngamma\n"
    assert not (workspace / "gone.txt").exists()

    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 1 and sessions[0]["turns"] == 8, listed.stdout
    assert sessions[0]["state"] == "completed"  # ended at EOF, closed cleanly

    for _ in range(3):  # delete, edit, write: each undone in turn
        undo = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
    assert (workspace / "gone.txt").read_text() == "bye\n"
    assert not (workspace / "notes/a.txt").exists()


async def test_a_deny_rule_in_the_user_config_refuses_the_call(workspace: Path, monkey_home: Path) -> None:
    (monkey_home / "config.toml").write_text('[approvals]\ndeny = ["file_write(secret/**)", "shell_execute(rm)"]\n')
    async with stdio_session(workspace, monkey_home) as client:
        denied = await client.call_tool("file_write", {"path": "secret/key.txt", "content": "x"})
        shell = await client.call_tool("shell_execute", {"command": "rm README.md"})
        allowed = await client.call_tool("file_write", {"path": "open.txt", "content": "x"})
    assert denied.is_error and "denied by rule file_write(secret/**)" in text(denied)
    assert shell.is_error and "denied by rule shell_execute(rm)" in text(shell)
    assert not allowed.is_error
    assert not (workspace / "secret").exists()
    assert (workspace / "README.md").exists()


async def test_paths_cannot_leave_the_workspace(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (workspace / "link").symlink_to(outside)
    async with stdio_session(workspace, monkey_home) as client:
        results = [
            await client.call_tool("file_read", {"path": "../outside/secret.txt"}),
            await client.call_tool("file_read", {"path": str(outside / "secret.txt")}),
            await client.call_tool("file_read", {"path": "link/secret.txt"}),
            await client.call_tool("file_write", {"path": "../outside/new.txt", "content": "x"}),
            await client.call_tool("file_write", {"path": str(outside / "abs.txt"), "content": "x"}),
            await client.call_tool("file_write", {"path": "link/via-link.txt", "content": "x"}),
            await client.call_tool("list_directory", {"path": "link"}),
        ]
    for result in results:
        assert result.is_error, text(result)
        assert "outside the workspace" in text(result), text(result)
        assert "top secret" not in text(result)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_protected_paths_are_refused_with_the_reason(workspace: Path, monkey_home: Path) -> None:
    hooks = workspace / ".git" / "hooks"
    before = sorted(p.name for p in hooks.iterdir())
    async with stdio_session(workspace, monkey_home) as client:
        write = await client.call_tool("file_write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})
        shell = await client.call_tool("shell_execute", {"command": "touch .git/hooks/pre-commit"})
        home = await client.call_tool("shell_execute", {"command": f"touch {monkey_home}/config.toml"})
    assert write.is_error and ".git" in text(write)
    assert shell.is_error and "needs a person's approval of this exact call" in text(shell), text(shell)
    assert "monkey serve has no person to ask" in text(shell)
    assert home.is_error and "needs a person's approval" in text(home), text(home)
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert not (monkey_home / "config.toml").exists()


async def test_unknown_tools_and_bad_arguments_are_tool_errors(workspace: Path, monkey_home: Path) -> None:
    async with stdio_session(workspace, monkey_home) as client:
        unknown = await client.call_tool("rm_rf", {})
        bad = await client.call_tool("file_write", {"path": "x.txt"})
        still = await client.call_tool("file_read", {"path": "README.md"})
    assert unknown.is_error and "unknown tool 'rm_rf'" in text(unknown)
    assert bad.is_error and "content" in text(bad)
    assert text(still) == "# proj\n"


@pytest.mark.subprocess
def test_malformed_input_gets_json_rpc_errors_and_the_server_goes_on(workspace: Path, monkey_home: Path) -> None:
    proc = serve_process(workspace, monkey_home)
    try:
        send_line(proc, "this is not json {")
        assert read_answer(proc) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
        }
        send_line(proc, "[1, 2]")
        assert read_answer(proc)["error"]["code"] == -32600
        send_line(proc, INIT)
        assert read_answer(proc)["result"]["serverInfo"]["name"] == "monkey"
        send_line(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send_line(proc, {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
        assert read_answer(proc)["error"]["code"] == -32601
        send_line(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}})
        assert read_answer(proc)["error"]["code"] == -32602
        send_line(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "file_read", "arguments": {"path": "README.md"}},
            },
        )
        answer = read_answer(proc)
        assert answer["id"] == 4 and answer["result"]["content"][0]["text"] == "# proj\n"
        assert proc.stdin is not None
        proc.stdin.close()  # EOF: the server ends by itself
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None and proc.stdout.read() == b""
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.subprocess
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_server_and_closes_the_session(workspace: Path, monkey_home: Path, sig: int) -> None:
    proc = serve_process(workspace, monkey_home)
    try:
        send_line(proc, INIT)
        read_answer(proc)
        send_line(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send_line(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "file_write", "arguments": {"path": "s.txt", "content": "x\n"}},
            },
        )
        assert read_answer(proc)["result"]["isError"] is False
        proc.send_signal(sig)  # stdin stays open: the signal alone ends it
        assert proc.wait(timeout=60) == 128 + sig
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    listed = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    (session,) = json.loads(listed.stdout)
    assert session["state"] == "completed" and session["turns"] == 1


@pytest.mark.subprocess
async def test_a_cancelled_call_stops_its_command_and_the_turn_is_stored(workspace: Path, monkey_home: Path) -> None:
    from mcp.shared.exceptions import MCPError

    from tests.support.procs import pids_running

    marker = "4711.25"  # sleep's argument, to find its process
    async with stdio_session(workspace, monkey_home) as client:
        with pytest.raises(MCPError):  # the client gives up and sends notifications/cancelled
            await client.call_tool(
                "shell_execute", {"command": f"sleep {marker}", "timeout": 600}, read_timeout_seconds=3
            )
        deadline = time.monotonic() + 60
        while pids_running(f"sleep {marker}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pids_running(f"sleep {marker}")
        after = await client.call_tool("file_read", {"path": "README.md"})
        assert text(after) == "# proj\n"
    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    show = await invoke_async(["sessions", "export", json.loads(listed.stdout)[0]["id"]], home=monkey_home)
    ends = [json.loads(line) for line in show.stdout.splitlines() if '"turn_completed"' in line]
    assert [e["reason"] for e in ends] == ["cancelled", "completed"], ends


async def test_a_protected_call_is_asked_of_the_clients_user_through_elicitation(
    workspace: Path, monkey_home: Path
) -> None:
    import mcp_types as types

    asked: list[str] = []
    answers = [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="accept", content={"approve": False}),
        types.ElicitResult(action="accept", content={"approve": True}),
        types.ElicitResult(action="accept", content={"approve": True}),
    ]  # the run outside the sandbox

    async def person(ctx: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answers.pop(0)

    hook = workspace / ".git" / "hooks" / "monkey-test"
    call = {"command": f"touch {hook.relative_to(workspace)}"}
    async with stdio_session(workspace, monkey_home, elicitation_callback=person) as client:
        declined = await client.call_tool("shell_execute", call)
        unticked = await client.call_tool("shell_execute", call)
        assert not hook.exists()
        approved = await client.call_tool("shell_execute", call)
        plain = await client.call_tool("file_write", {"path": "plain.txt", "content": "x"})  # not protected: not asked
    assert declined.is_error and "the person declined it through the MCP client" in text(declined), text(declined)
    assert unticked.is_error and "did not approve it" in text(unticked)
    assert not approved.is_error, text(approved)
    assert hook.exists()
    assert not plain.is_error and len(asked) == 4
    assert ".git" in asked[0] and "touch .git/hooks/monkey-test" in asked[0]
    assert "OUTSIDE monkey's sandbox" not in asked[0] and "still in monkey's sandbox" in asked[0]
    # approved, the command ran in the sandbox, which kept .git/ read-only: asked again, it ran outside
    assert "the sandbox blocked it" in asked[3] and "OUTSIDE monkey's sandbox" in asked[3]


def test_a_bad_workspace_or_config_is_one_line_and_nothing_on_stdout(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    missing = invoke(["serve", "--cwd", str(tmp_path / "nowhere")], home=monkey_home, input="")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == f"monkey: workspace {tmp_path / 'nowhere'} is not a directory"
    (monkey_home / "config.toml").write_text('[approvals]\ndeny = ["file_write(("]\n')
    broken = invoke(["serve", "--cwd", str(workspace)], home=monkey_home, input="")
    assert broken.returncode == 2 and broken.stdout == ""
    assert len(broken.stderr.strip().splitlines()) == 1 and broken.stderr.startswith("monkey: ")
