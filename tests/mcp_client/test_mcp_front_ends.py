"""``/mcp`` in the app (Pilot) and the ``--plain`` REPL (a pty), with a real server; the approval
dialog of an MCP call shows the tool's description and arguments."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import write_script
from tests.support.pty import PTY_TIMEOUT, spawn_repl
from tests.support.mcp import fake_server, write_servers
from tests.support.script import call
from tests.support.app import make_app, notices, settle, type_and_send


async def _until(pilot, ok, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    end = asyncio.get_running_loop().time() + timeout
    while not ok():
        assert asyncio.get_running_loop().time() < end, f"never: {what}"
        await pilot.pause(0.05)


async def test_mcp_in_the_app_lists_disables_and_reconnects(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    app = make_app(workspace, tmp_path / "s.json", [{"text": "x"}])
    async with app.run_test(size=(160, 50)) as pilot:
        await _until(pilot, lambda: app.status.mcp == "mcp 1/1 ready", "the server is ready")
        await type_and_send(pilot, app, "/mcp")
        await _until(pilot, lambda: any("fake (user): ready, 9 tools" in n for n in notices(app)), "/mcp answered")
        assert any("mcp__fake__greet, mcp__fake__peek" in n for n in notices(app))
        await type_and_send(pilot, app, "/mcp disable fake")
        await _until(pilot, lambda: app.status.mcp == "mcp 0/1 ready", "the status bar shows it")
        assert "mcp__fake__greet" not in app.agent.tools
        await type_and_send(pilot, app, "/mcp reconnect fake")
        await _until(pilot, lambda: any(n.startswith("fake: ready") for n in notices(app)), "reconnected")
        assert "mcp__fake__greet" in app.agent.tools and (tmp_path / "starts").read_text() == "2"
        await app.action_quit()


async def test_the_approval_dialog_shows_the_description_and_arguments(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from monkey.ui.screens.approval import ApprovalScreen

    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    turns = [{"tool_calls": [call("mcp__fake__greet", name="Ada")]}, {"text": "greeted"}]
    app = make_app(workspace, tmp_path / "s.json", turns)
    async with app.run_test(size=(160, 50)) as pilot:
        await _until(pilot, lambda: app.status.mcp == "mcp 1/1 ready", "the server is ready")
        await type_and_send(pilot, app, "greet Ada")
        await _until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the dialog")
        shown = app.screen.request.summary
        assert "MCP server fake (user:" in shown and "Say hello to someone." in shown
        assert '"name": "Ada"' in shown and "a new tool: its first call" in shown
        await pilot.press("y")
        await settle(pilot, app, timeout=30)
        assert "hello Ada" in app.agent.messages[-2].content
        await app.action_quit()


@pytest.mark.pty
def test_mcp_in_the_repl(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(
        monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts"), "gone": {"command": "/nonexistent/server"}}
    )
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "x"}]), columns=200)
    child.expect_exact("Type a task")
    child.sendline("/mcp reconnect fake")  # waits until it is connected again
    child.expect_exact("fake: ready")
    child.sendline("/mcp")
    child.expect_exact("fake (user): ready, 9 tools")
    child.expect_exact("gone (user): failed, 0 tools — cannot start /nonexistent/server: no such program")
    child.sendline("/exit")
    child.expect(pexpect.EOF, timeout=PTY_TIMEOUT)  # the REPL has exited (a pattern of `$` matched at once, and
    child.close()  # close() then had to kill a REPL still shutting down, which failed on a loaded machine)


@pytest.mark.pty
def test_a_project_servers_definition_is_approved_once_and_asked_again_when_it_changes(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from tests.support.cli import invoke

    state = tmp_path / "starts"
    write_servers(workspace / ".mcp.json", {"fake": fake_server(state)})
    invoke(["trust", str(workspace)], home=monkey_home)
    script = write_script(tmp_path / "s.json", [{"text": "x"}])

    def session(answer: str | None) -> str:
        child = spawn_repl(workspace, monkey_home, script, columns=200)
        if answer is not None:
            child.expect_exact("defines the MCP server fake:")
            child.expect_exact("Start it (asked again if its definition changes)? [y/N]")
            child.sendline(answer)
        child.expect_exact("Type a task")
        child.sendline("/mcp")
        child.expect(r"fake \(project\): (\w[\w ]*)")
        status = child.match.group(1)
        child.sendline("/exit")
        child.expect(pexpect.EOF, timeout=PTY_TIMEOUT)
        child.close()
        return status

    assert session("n") == "not started"
    assert not state.exists()
    session("y")
    assert session(None) in ("starting", "ready")  # approved: not asked again
    changed = fake_server(state, args=["-m", "tests.support.fakes.mcp_server", str(state), "x"])
    write_servers(workspace / ".mcp.json", {"fake": changed})
    assert session("n") == "not started"  # a changed definition is asked about again
    approved = (monkey_home / "mcp" / "approved.json").read_text()
    assert str(workspace) in approved and not (workspace / ".monkey" / "mcp").exists()
