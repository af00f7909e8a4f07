"""A tool call's duration is its run time; the time a person spent deciding is shown apart."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from monkey.events import ToolResult, decode
from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.cli import invoke_async
from tests.support.app import SIZE, settle, type_and_send, wait_for_screen

EDIT = [
    {
        "text": "",
        "tool_calls": [
            {"name": "file_edit", "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"}}
        ],
    },
    {"text": "Renamed."},
]
THINK = 1.5
"""Seconds the person looks at the dialog before answering (a lower bound of the wait, not a race)."""


async def test_the_time_spent_deciding_is_not_the_tools_run_time(app_for, monkey_home: Path, workspace: Path) -> None:
    app = app_for(EDIT)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename the project")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.pause(THINK)  # the person reads the diff
        await pilot.press("y")
        await settle(pilot, app)
        [block] = app.transcript.query(ToolBlock)
        assert block.state == "ok"
        assert block.wait_ms >= THINK * 1000
        assert block.duration_ms is not None and block.duration_ms < block.wait_ms
        assert f"· {block.duration_ms / 1000:.2f}s · waited {block.wait_ms / 1000:.1f}s" in str(block.title)
        session_id = app.agent.session_id
        await app.action_quit()
    # the stored session keeps both times
    exported = await invoke_async(["sessions", "export", session_id], home=monkey_home)
    [line] = [line for line in exported.stdout.splitlines() if '"tool_result"' in line]
    stored = json.loads(line)
    assert stored["wait_ms"] >= THINK * 1000 and stored["duration_ms"] < stored["wait_ms"]


async def test_a_call_nobody_was_asked_about_shows_no_wait(app_for) -> None:
    app = app_for(EDIT, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename the project")
        await settle(pilot, app)
        [block] = app.transcript.query(ToolBlock)
        assert block.state == "ok" and block.wait_ms == 0 and "waited" not in str(block.title)


def test_a_result_stored_before_wait_times_existed_still_reads() -> None:
    old = {
        "type": "tool_result",
        "session_id": "s1",
        "call_id": "c1",
        "name": "file_read",
        "ok": True,
        "output": "x",
        "duration_ms": 3.0,
        "diff": "",
    }
    event = decode(msgspec.json.encode(old))
    assert isinstance(event, ToolResult) and event.wait_ms == 0.0 and event.duration_ms == 3.0
