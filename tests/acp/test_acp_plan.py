"""Plan mode and workflows from an editor (ACP): /plan, the plan asked as a permission, /workflow."""

from __future__ import annotations

from pathlib import Path

from tests.support.acp import prompt, start_monkey, text_of
from tests.support.cli import write_script

PLAN_TURNS = [
    {"text": "My plan.", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Write hello.txt"}}]},
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
    {"text": "Written."},
]


async def test_plan_in_an_editor_allow_always_goes_on_accepting_edits(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", PLAN_TURNS)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        client.answer = "allow_always"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("/plan greet"))
    assert reply.stop_reason == "end_turn"
    modes = [u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"]
    assert modes == ["plan", "accept-edits"]  # the editor's mode picker follows the approved plan
    [(_, asked)] = client.questions  # the plan was asked; the write then ran without a question
    assert "1. Write hello.txt" in asked.content[0].content.text
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert "Written." in text_of(client.updates)


async def test_plan_rejected_in_an_editor_changes_nothing(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", PLAN_TURNS)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script), "--mode", "plan") as (
        conn,
        client,
        _,
    ):
        client.answer = "reject_once"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("greet"))
    assert len(client.questions) == 1 and not (workspace / "hello.txt").exists()


async def test_a_workflow_from_an_editor(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "w.json",
        [
            {"text": "Nothing there yet."},
            {
                "text": "My plan.",
                "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Write hello.txt"}}],
            },
            {"text": "Approved."},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
            {"text": "Wrote it."},
            {"text": "VERDICT: done\nREASON: hello.txt is there"},
        ],
    )
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        client.answer = "allow_always"  # the plan: approved into accept-edits, so the write asks nothing
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("/workflow tpdr greet"))
    assert reply.stop_reason == "end_turn"
    assert len(client.questions) == 1 and (workspace / "hello.txt").read_text() == "hi\n"
    said = text_of(client.updates)
    assert "── workflow stage" not in said  # stages are events, not the model's words
    assert "ended: done (hello.txt is there)" in said
    modes = [u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"]
    assert modes[0] == "plan" and modes[-1] == "default"  # each stage's mode, then the session's own again
