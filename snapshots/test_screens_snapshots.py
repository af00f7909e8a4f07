"""Snapshots of the approval dialog, the checkpoint timeline and the session picker.

The data is real (requests from the real tools, checkpoints from the real loop, sessions
from real scripted runs); times are shown through a fixed clock and ids are fixed. The
``workspace`` and ``monkey_home`` fixtures come from ``snapshots/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.store import SessionStore
from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.screens.picker import SessionPickerScreen
from monkey.ui.screens.timeline import TimelineScreen
from tests.support.app import until
from tests.support.screen_data import (
    SESSION,
    ScreenApp,
    edit_request,
    fixed_time,
    shell_request,
    three_changes,
    timeline_loaded,
)

pytestmark = pytest.mark.xdist_group("snapshots")  # one workspace path: one worker at a time

SIZE = (120, 36)


def test_approval_edit(snap_compare, workspace: Path) -> None:
    assert snap_compare(ScreenApp(ApprovalScreen(edit_request(workspace), guard=0)), terminal_size=SIZE)


def test_approval_of_an_eleven_line_diff_at_80_by_24(snap_compare, workspace: Path) -> None:
    """The grant lines and the answer keys stay in view; the diff box shrinks and scrolls."""
    from tests.support.screen_data import request_for

    (workspace / "calc.py").write_text("".join(f"line {i}\n" for i in range(20)))
    request = request_for(
        workspace, "file_edit", {"path": "calc.py", "old_string": "line 3\n", "new_string": "LINE 3\n"}
    )
    assert snap_compare(ScreenApp(ApprovalScreen(request, guard=0)), terminal_size=(80, 24))


def test_approval_shell_hidden_characters(snap_compare, workspace: Path) -> None:
    assert snap_compare(ScreenApp(ApprovalScreen(shell_request(workspace), guard=0)), terminal_size=SIZE)


def test_approval_deny_reason(snap_compare, workspace: Path) -> None:
    assert snap_compare(
        ScreenApp(ApprovalScreen(edit_request(workspace), guard=0)), press=["n", *"too risky"], terminal_size=SIZE
    )


def test_approval_asked_by_a_sub_agent_with_one_more_waiting(snap_compare, workspace: Path) -> None:
    from dataclasses import replace

    request = replace(edit_request(workspace), asker="general (sub-agent): fix the sum")
    assert snap_compare(ScreenApp(ApprovalScreen(request, guard=0, waiting=1)), terminal_size=SIZE)


def test_timeline(snap_compare, workspace: Path, monkey_home: Path) -> None:
    import asyncio

    cps = asyncio.run(three_changes(workspace, monkey_home))
    assert snap_compare(
        ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time)), run_before=timeline_loaded, terminal_size=SIZE
    )


def test_timeline_diff(snap_compare, workspace: Path, monkey_home: Path) -> None:
    import asyncio

    cps = asyncio.run(three_changes(workspace, monkey_home))

    async def diff(pilot) -> None:
        await timeline_loaded(pilot)
        await pilot.press("up", "d")

    assert snap_compare(
        ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time)), run_before=diff, terminal_size=SIZE
    )


def test_timeline_refusal(snap_compare, workspace: Path, monkey_home: Path) -> None:
    import asyncio

    cps = asyncio.run(three_changes(workspace, monkey_home))
    (workspace / "notes.txt").write_text("one\nTWO\nthree\nmine, by hand\n")

    async def refuse(pilot) -> None:
        await timeline_loaded(pilot)
        await pilot.press("up", "up", "r")
        for _ in range(200):
            await pilot.pause(0.05)
            if pilot.app.screen.refused is not None:
                break
        pilot.app.clear_notifications()
        for _ in range(200):  # the toast is gone and the refusal is laid out, however slow the machine
            await pilot.pause(0.05)
            if not pilot.app.query("Toast") and pilot.app.screen.query_one("#detail").region.height > 0:
                break
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(
        ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time)), run_before=refuse, terminal_size=SIZE
    )


def test_picker(snap_compare, workspace: Path) -> None:
    import asyncio

    from tests.support.screen_data import record_sessions

    asyncio.run(record_sessions(workspace))

    class PickerApp(ScreenApp):
        async def on_mount(self) -> None:
            self.store = await SessionStore.open()
            self.push_screen(SessionPickerScreen(self.store, workspace, format_time=fixed_time))

        async def on_unmount(self) -> None:
            await self.store.close()

    async def loaded(pilot) -> None:
        from textual.widgets import DataTable

        def measured() -> bool:  # the rows are in and the columns sized to them (on the table's idle)
            columns = pilot.app.screen.query_one(DataTable).columns.values()
            return bool(pilot.app.screen.sessions) and max(c.content_width for c in columns) > len("updated")

        await until(pilot, measured, "the picker's table is filled and measured")
        await pilot.pause()

    assert snap_compare(PickerApp(None), run_before=loaded, terminal_size=SIZE)  # type: ignore[arg-type]


def plan_request():  # type: ignore[no-untyped-def]
    from monkey.permissions.requests import build_request

    plan = (
        "# Plan: greet\n\n1. Write `hello.py` that prints a greeting.\n2. Add `tests/test_hello.py`.\n"
        "3. Run `pytest -q` to check it.\n\n[bold red]not markup[/]"
    )
    return build_request("call_1", "exit_plan_mode", {"plan": plan}, "")


def test_plan_dialog(snap_compare) -> None:
    from monkey.ui.screens.plan import PlanScreen

    assert snap_compare(ScreenApp(PlanScreen(plan_request(), guard=0)), press=["s"], terminal_size=SIZE)
