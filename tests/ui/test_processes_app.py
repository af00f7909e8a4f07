"""The app shows the background processes: a count in the status bar and ``/processes`` with live output.

The real app on a scripted backend (``make_app``), real processes; waits are on conditions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.app import SIZE, make_app, settle, type_and_send, until, wait_for_screen

pytestmark = pytest.mark.subprocess

PRINTER = "printf 'compiled 3 files\\nwatching for changes\\n'"
TURNS = [
    {
        "text": "",
        "tool_calls": [
            {"name": "shell_execute", "arguments": {"command": PRINTER, "background": True}},
            {"name": "shell_execute", "arguments": {"command": "sleep 300", "background": True}},
        ],
    },
    {"text": "Both started."},
]


async def test_the_status_bar_counts_them_and_processes_follows_and_stops_one(workspace: Path, tmp_path: Path) -> None:
    from textual.widgets import DataTable, Log

    from monkey.ui.screens.processes import ProcessesScreen

    app = make_app(workspace, tmp_path / "script.json", TURNS, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        assert "background" not in str(app.status.status_text())
        await type_and_send(pilot, app, "start them")
        await settle(pilot, app)
        table = app.agent.processes
        await until(pilot, lambda: table.get("p1").done.is_set(), "the printer ended")
        await until(pilot, lambda: app.status.processes == 1, "the count follows the one still running")
        assert " · 1 background" in str(app.status.status_text())
        await type_and_send(pilot, app, "/processes")
        await wait_for_screen(pilot, app, ProcessesScreen)
        screen = app.screen
        log = screen.query_one("#output", Log)
        await until(pilot, lambda: "watching for changes" in "\n".join(log.lines), "the output shown")
        assert list(log.lines)[:2] == ["compiled 3 files", "watching for changes"]
        grid = screen.query_one("#table", DataTable)
        assert [grid.get_row_at(i)[:2] for i in range(grid.row_count)] == [["p1", "exited 0"], ["p2", "running"]]
        await pilot.press("down")  # p2: its output (none yet), then stopped with s
        await until(pilot, lambda: screen.shown is table.get("p2"), "p2 selected")
        await pilot.press("k")
        assert table.get("p2").kept
        await pilot.press("s")
        await until(pilot, lambda: table.get("p2").state == "stopped", "p2 stopped")
        await until(pilot, lambda: app.status.processes == 0, "the count is zero again")
        await until(pilot, lambda: grid.get_row_at(1)[1] == "stopped, kept", "the table follows")
        await pilot.press("escape")
        await app.action_quit()
