"""One-line snapshot tests of the main screen; each freezes clocks and ids first."""

from __future__ import annotations

import pytest

from monkey.events import (
    IterationStarted,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolOutput,
    ToolResult,
    TurnStarted,
    Usage,
)
from monkey.ui.widgets.tool_block import ToolBlock

pytestmark = pytest.mark.xdist_group("snapshots")  # one workspace path: one worker at a time

SIZE = (120, 36)
EDIT = [
    {
        "text": "I'll rename the project and look around.",
        "tool_calls": [
            {
                "name": "file_edit",
                "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"},
            },
            {"name": "shell_execute", "arguments": {"command": "printf 'one\\ntwo\\n'"}},
        ],
    },
    {"text": "Done: the title now reads **project**."},
]


async def send(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    app = pilot.app
    app.query_one("#prompt").insert(text)
    await pilot.press("enter")
    for _ in range(200):
        await pilot.pause(0.05)
        if not app.working:
            break
    for block in app.transcript.query(ToolBlock):  # durations vary from run to run
        block.duration_ms = 12.0
        block._refresh_title()
    await pilot.pause(0.2)


def test_empty_app(app_for, snap_compare) -> None:
    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE)


def test_streaming_turn(app_for, snap_compare) -> None:
    async def stream(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        app.transcript.add_user("explain the loop")
        app.status.set_working(True)
        for event in [
            TurnStarted(turn=1, prompt="explain the loop"),
            IterationStarted(turn=1, iteration=1, max_iterations=20),
            ThinkingDelta(text="The loop is in agent/loop.py."),
            TextDelta(text="The loop **streams** events:\n\n- `text_delta` for text\n"),
            TextDelta(text="- `tool_call` for tools\n\nand then"),
            Usage(input_tokens=1200, output_tokens=80, cost_usd=0.0042),
        ]:
            await app.feed(event)
        await pilot.pause(0.3)

    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE, run_before=stream)


def test_tool_blocks_with_a_diff(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await send(pilot, "rename the project")

    assert snap_compare(app_for(EDIT, "--no-approval"), terminal_size=SIZE, run_before=run)


def test_event_pane_with_a_filter(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        app.event_pane.format_time = lambda ts: "12:00:00"
        await pilot.press("ctrl+e", "escape")  # the pane opens with the filter focused; Esc: back to the message box
        await send(pilot, "say hello")
        app.event_pane.query_one("#event-filter").focus()
        for key in "text":
            await pilot.press(key)
        await pilot.pause(0.2)

    assert snap_compare(app_for([{"text": "Hello there, how are you today?"}]), terminal_size=SIZE, run_before=run)


def test_event_pane_with_a_selected_row_and_its_detail(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        pane = app.event_pane
        pane.format_time = lambda ts: "12:00:00"
        await pilot.press("ctrl+e")
        for event in [
            TurnStarted(turn=1, prompt="list the files"),
            IterationStarted(turn=1, iteration=1, max_iterations=20),
            TextDelta(text="Let me look."),
            ToolCallEvent(call_id="c1", name="shell_execute", arguments={"command": "ls"}),
            ToolOutput(call_id="c1", text="README.md\nsrc\n"),
            ToolResult(call_id="c1", name="shell_execute", ok=True, output="README.md\nsrc\n"),
            Usage(input_tokens=1200, output_tokens=80, cost_usd=0.0042),
        ]:
            pane.add(event.__class__(**{**{f: getattr(event, f) for f in event.__struct_fields__}, "ts": 1.7e9}))
        await pilot.pause(0.2)
        pane.query_one("#event-filter").focus()
        await pilot.press("down", "up", "up", "up", "enter")  # the tool_call line
        await pilot.pause(0.2)

    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE, run_before=run)


def test_an_error(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await send(pilot, "do something")

    turns = [{"error": "the server is on fire", "error_kind": "invalid_request"}]
    assert snap_compare(app_for(turns), terminal_size=SIZE, run_before=run)


def test_status_bar_in_auto_mode(app_for, snap_compare) -> None:
    assert snap_compare(app_for([{"text": "x"}], "--no-approval"), terminal_size=SIZE)


def test_more_below_when_scrolled_up(app_for, snap_compare) -> None:
    long = "\n\n".join(f"Paragraph {i} of a long answer." for i in range(30))

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await send(pilot, "explain everything")
        await pilot.press("shift+tab", "pageup")  # to the transcript, then a page up: reading above the end
        for _ in range(100):
            if pilot.app.more_below.has_class("-shown"):
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)

    assert snap_compare(app_for([{"text": long}]), terminal_size=SIZE, run_before=run)


def test_status_bar_with_mcp_servers(app_for, monkey_home, snap_compare) -> None:
    (monkey_home / "mcp.json").write_text(
        '{"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}, "off": {"command": "x", "enabled": false}}}'
    )

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        for _ in range(200):  # the missing program fails at once; the disabled server never starts
            if "failed" in pilot.app.status.mcp:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)

    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE, run_before=run)


def test_status_bar_with_a_budget(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await send(pilot, "say hello")

    turns = [{"text": "Hello.", "usage": {"input_tokens": 900, "output_tokens": 100, "cost_usd": 0.25}}]
    assert snap_compare(
        app_for(turns, "--max-budget-usd", "2", "--max-tokens", "5000"), terminal_size=SIZE, run_before=run
    )


def test_a_running_sub_agent(app_for, snap_compare) -> None:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        from monkey.events import SubagentStarted, ToolStarted

        app = pilot.app
        app.transcript.add_user("how does the loop work?")
        child = "s-child-1"
        grep = {"pattern": "async def run"}
        for event in [
            ToolCallEvent(
                call_id="c1",
                name="task",
                arguments={"description": "find the loop", "prompt": "find the agent loop", "agent": "explore"},
            ),
            ToolStarted(call_id="c1", name="task"),
            SubagentStarted(call_id="c1", child_session_id=child, agent="explore", description="find the loop"),
            ToolCallEvent(session_id=child, call_id="k1", name="grep_search", arguments=grep),
            ToolResult(session_id=child, call_id="k1", name="grep_search", ok=True, output="monkey/agent/loop.py:262"),
            ToolCallEvent(session_id=child, call_id="k2", name="file_read", arguments={"path": "monkey/agent/loop.py"}),
        ]:
            await app.feed(event)
        await pilot.pause(0.3)

    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE, run_before=run)


def test_header_with_the_instruction_files(app_for, workspace, monkey_home, snap_compare) -> None:
    (workspace / "AGENTS.md").write_text("Run the tests with `make test`. @docs/rules.md\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "rules.md").write_text("No new dependencies.\n")
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        from monkey.events import InstructionRef, InstructionsLoaded
        from monkey.ui.widgets.app_header import AppHeader
        from tests.support.app import until

        header = pilot.app.query_one(AppHeader)
        await until(pilot, lambda: header.instructions, "the header names the session's instruction files")
        await pilot.app.feed(
            InstructionsLoaded(call_id="c1", files=[InstructionRef(path="lib/AGENTS.md", sha256="0", bytes=10)])
        )
        await pilot.pause(0.2)

    assert snap_compare(app_for([{"text": "x"}]), terminal_size=SIZE, run_before=run)


WORKFLOW = [
    {"text": "The README is one line."},
    {"text": "My plan.", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Nothing to change."}}]},
    {"text": "Approved."},
    {"text": "Nothing needed changing."},
    {"text": "VERDICT: done\nREASON: the README already says it"},
]


def test_workflow_stages(app_for, snap_compare, monkeypatch) -> None:
    monkeypatch.setattr("monkey.workflow.runner.new_id", lambda prefix="": f"{prefix}-snapshot-1")

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        from monkey.ui.screens.plan import PlanScreen

        app = pilot.app
        app.query_one("#prompt").insert("/workflow tpdr check the README")
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.05)
            if isinstance(app.screen, PlanScreen):
                break
        await pilot.press("d")
        for _ in range(200):
            await pilot.pause(0.05)
            if not app.working:
                break
        for block in app.transcript.query(ToolBlock):  # run and wait times vary from run to run
            block.duration_ms, block.wait_ms = 12.0, 0.0
            block._refresh_title()
        await pilot.pause(0.2)

    assert snap_compare(app_for(WORKFLOW), terminal_size=SIZE, run_before=run)


def test_background_processes_view(app_for, snap_compare) -> None:
    """``/processes``: the table (no pids, no times) and the selected process's output."""
    turns = [
        {
            "text": "",
            "tool_calls": [
                {
                    "name": "shell_execute",
                    "arguments": {"command": "printf 'compiled 3 files\\nwatching for changes\\n'", "background": True},
                },
                {"name": "shell_execute", "arguments": {"command": "sleep 300", "background": True}},
            ],
        },
        {"text": "Both started."},
    ]

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        from monkey.ui.screens.processes import ProcessesScreen

        await send(pilot, "start them")
        app = pilot.app
        for _ in range(1200):  # the printer ends, its output read; the sleeper runs on
            if app.agent.processes.get("p1").done.is_set() and app.status.processes == 1:
                break
            await pilot.pause(0.05)
        app.query_one("#prompt").insert("/processes")
        await pilot.press("enter")
        for _ in range(1200):
            if isinstance(app.screen, ProcessesScreen) and len(app.screen.query_one("#output").lines) >= 2:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.3)

    assert snap_compare(app_for(turns, "--no-approval"), terminal_size=SIZE, run_before=run)
