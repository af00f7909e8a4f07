"""The plan dialog in the app (Pilot): /plan, the model's exit_plan_mode call, approve or reject."""

from __future__ import annotations

from pathlib import Path

from monkey.ui.screens.plan import PlanScreen
from tests.support.app import SIZE, settle, type_and_send, until

PLAN = "# Plan\n\n1. Write `hello.txt`.\n2. Check it."
TURNS = [
    {"tool_calls": [{"name": "file_read", "arguments": {"path": "README.md"}}]},
    {"text": "My plan.", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]},
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
    {"text": "Done."},
]


def status(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.status.status_text())


async def test_plan_approved_in_the_dialog_goes_on_accepting_edits(app_for, workspace: Path) -> None:
    app = app_for(TURNS)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/plan greet the world")
        await until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan dialog")
        assert app.agent.policy.mode == "plan" and "⏵ plan (read-only) · " in status(app)
        assert "Write hello.txt" in str(app.screen.query_one("#plan").source).replace("`", "")
        await pilot.press("s", "a")
        await settle(pilot, app)
        assert (workspace / "hello.txt").read_text() == "hi\n"  # accept-edits: the write ran without asking
        assert app.agent.policy.mode == "accept-edits" and status(app).startswith("⏵ accept edits · ")
        [kept] = list((workspace / ".monkey" / "plans").iterdir())
        assert kept.read_text() == PLAN + "\n"
        assert app.last_reason == "completed"


async def test_plan_rejected_in_the_dialog_stops_and_stays_in_plan_mode(app_for, workspace: Path) -> None:
    app = app_for(TURNS)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/plan greet the world")
        await until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan dialog")
        await pilot.press("r")
        await settle(pilot, app)
        assert not (workspace / "hello.txt").exists() and not (workspace / ".monkey").exists()
        assert app.agent.policy.mode == "plan" and app.last_reason == "denied"
        assert app.agent.backend.calls == 2


async def test_plan_sent_back_with_feedback(app_for, workspace: Path) -> None:
    revised = {
        "text": "Revised.",
        "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN + "\n3. Test."}}],
    }
    app = app_for([*TURNS[:2], revised, *TURNS[2:]], "--mode", "plan")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "greet the world")
        await until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan dialog")
        await pilot.press("f", *"add a test", "enter")
        await until(
            pilot,
            lambda: isinstance(app.screen, PlanScreen) and "3. Test." in app.screen.request.plan,
            "the revised plan",
        )
        await pilot.press("d")
        await until(pilot, lambda: app.screen.__class__.__name__ == "ApprovalScreen", "the write's approval")
        await pilot.press("y")
        await settle(pilot, app)
        assert (workspace / "hello.txt").exists() and app.agent.policy.mode == "default"
        sent_back = app.agent.messages[4]
        assert sent_back.role == "tool" and "add a test" in sent_back.content


async def test_a_session_left_in_plan_mode_resumes_in_it(
    app_for, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from tests.support.cli import invoke_async, write_script

    script = write_script(tmp_path / "first.json", [{"text": "Looked around."}])
    first = await invoke_async(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--mode",
            "plan",
            "--output-format",
            "stream-json",
            "--task",
            "look",
        ],
        home=monkey_home,
    )
    assert first.returncode == 0, first.stderr
    sid = first.of_type("session_started")[0]["session_id"]
    app = app_for(
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}]},
            {"text": "I could not."},
        ],
        resume=sid,
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: app.session is not None and "⏵ plan (read-only) · " in status(app),
            "the status bar in plan mode",
        )
        assert app.agent.policy.mode == "plan"
        await type_and_send(pilot, app, "write x.txt")
        await settle(pilot, app)
        assert not (workspace / "x.txt").exists()


async def test_the_plan_calls_block_names_the_plan_not_its_json(app_for) -> None:
    from monkey.ui.widgets.tool_block import ToolBlock

    app = app_for(TURNS)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/plan greet the world")
        await until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan dialog")
        title = str(app.transcript.tools[app.screen.request.call_id].title)
        assert "exit_plan_mode plan: Plan" in title and "{" not in title and "\\n" not in title, title
        await pilot.press("r")
        await settle(pilot, app)
    other = ToolBlock("c2", "mcp__docs__search", {"query": "two\nlines", "limit": 3})
    assert "search query: two lines, limit: 3" in other.title
