"""A plugin's tool call in the full-screen app (Pilot): the approval dialog answers it."""

from __future__ import annotations

from pathlib import Path

from monkey.cli import build_parser
from monkey.commands.flags import session_request
from monkey.session.setup import resolve_setup
from monkey.ui.app import MonkeyApp
from monkey.ui.approver import TuiApprover
from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.plugins import WRITE, results
from tests.support.app import settle, type_and_send, until

SIZE = (120, 36)


def plugin_app(workspace: Path, name: str) -> MonkeyApp:
    args = build_parser().parse_args(["agent", "--backend", f"plugin:{name}", "--cwd", str(workspace)])
    setup = resolve_setup(session_request(args), TuiApprover())
    return MonkeyApp(setup, notices=setup.notices, clock=lambda: 0.0, approval_guard=0.0)


async def test_the_dialog_approves_a_plugins_write(install, workspace: Path):
    plugin = install("writer", [{"text": "Writing."}, WRITE, {"text": "Done."}])
    app = plugin_app(workspace, "writer")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "write notes")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        assert app.screen.request.tool == "file_write"
        await pilot.press("y")
        await settle(pilot, app, timeout=30)
        assert app.transcript.query_one(ToolBlock).state == "ok"
    assert (workspace / "notes.txt").read_text() == "from the plugin\n"
    assert results(plugin)[0]["is_error"] is False


async def test_escape_in_the_dialog_stops_the_plugin(install, workspace: Path):
    plugin = install("writer", [WRITE, {"text": "never"}])
    app = plugin_app(workspace, "writer")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "write notes")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        await pilot.press("escape")
        await settle(pilot, app, timeout=30)
        await until(pilot, plugin.saw_eof, "the plugin's stdin closed")
    assert not (workspace / "notes.txt").exists()
    assert results(plugin) == []
