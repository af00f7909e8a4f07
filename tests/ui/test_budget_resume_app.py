"""The app resuming a session shows the session's spend against its budget, and goes on counting from it."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke_async, write_script
from tests.support.app import settle, type_and_send, until

SIZE = (120, 36)


async def spend(workspace: Path, home: Path, script: Path) -> str:
    """Run a task that spends $0.30 and 200 + 100 tokens; its session id."""
    write_script(
        script,
        [
            {
                "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}],
                "usage": {"cost_usd": 0.1, "input_tokens": 100, "output_tokens": 50},
            },
            {"text": "done", "usage": {"cost_usd": 0.2, "input_tokens": 100, "output_tokens": 50}},
        ],
    )
    run = await invoke_async(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "look",
        ],
        home=home,
    )
    assert run.returncode == 0, run.stderr
    return run.events[0]["session_id"]


async def test_the_status_bar_shows_the_resumed_sessions_spend_and_the_budget_counts_it(
    app_for, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    await spend(workspace, monkey_home, tmp_path / "first.json")
    turns = [
        {
            "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}],
            "usage": {"cost_usd": 0.25, "input_tokens": 10, "output_tokens": 10},
        },
        {"text": "never asked"},
    ]
    app = app_for(turns, "--max-budget-usd", "0.5", "--max-tokens", "1000", continue_=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session is not None, "the session is open")
        await settle(pilot, app)
        line = app.status.status_text().plain
        assert "↑200 ↓100/1,000" in line and "$0.3000/$0.50" in line, line
        await type_and_send(pilot, app, "more")
        await settle(pilot, app)
        assert app.last_reason == "budget", "$0.30 before and $0.25 now reach the $0.50 budget"
        line = app.status.status_text().plain
        assert "↑210 ↓110/1,000" in line and "$0.5500/$0.50" in line, line
        assert app.agent.backend.calls == 1, "one model response, then the budget"


async def test_resume_in_the_app_counts_the_other_sessions_spend(
    app_for, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    first = await spend(workspace, monkey_home, tmp_path / "first.json")
    app = app_for([{"text": "never asked"}], "--max-budget-usd", "0.25")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session is not None, "the session is open")
        assert "$0.0000/$0.25" in app.status.status_text().plain
        await type_and_send(pilot, app, f"/resume {first}")
        await until(pilot, lambda: app.session is not None and app.agent.session_id == first, "resumed")
        await settle(pilot, app)
        assert "$0.3000/$0.25" in app.status.status_text().plain
        await type_and_send(pilot, app, "more")
        await settle(pilot, app)
        assert app.last_reason == "budget" and app.agent.backend.calls == 0, "used up: no model call"


async def test_clear_keeps_showing_what_the_sessions_budget_counts(app_for, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turns = [
        {"text": "first", "usage": {"cost_usd": 0.3, "input_tokens": 100, "output_tokens": 50}},
        {"text": "second", "usage": {"cost_usd": 0.1, "input_tokens": 100, "output_tokens": 50}},
    ]
    app = app_for(turns, "--max-budget-usd", "0.5")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session is not None, "the session is open")
        await type_and_send(pilot, app, "one")
        await settle(pilot, app)
        await type_and_send(pilot, app, "/clear")
        await settle(pilot, app)
        line = app.status.status_text().plain
        assert "$0.3000/$0.50" in line and "↑100 ↓50" in line, f"a new conversation, the same session: {line}"
        await type_and_send(pilot, app, "two")
        await settle(pilot, app)
        assert "$0.4000/$0.50" in app.status.status_text().plain, "counted on from the session's spend"
