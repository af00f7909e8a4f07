"""``monkey acp`` with sub-agents asking at once: one question at a time, each saying who asks,
and an answer for the session settles the question that waited behind it."""

from __future__ import annotations

from pathlib import Path

from tests.support.acp import prompt, start_monkey
from tests.support.cli import write_script


def _two_children_writing(tmp_path: Path) -> Path:
    def task(description: str) -> dict:
        return {"name": "task", "arguments": {"description": description, "prompt": "write it", "agent": "general"}}

    def child(path: str) -> dict:
        return {
            "turns": [
                {"tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": "x\n"}}]},
                {"text": f"wrote {path}"},
            ]
        }

    return write_script(
        tmp_path / "s.json",
        [{"tool_calls": [task("first file"), task("second file")]}, {"text": "both written"}],
        agents={"general#1": child("a.txt"), "general#2": child("b.txt")},
    )


def _note(tool_call) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(block.content.text for block in tool_call.content if getattr(block, "type", "") == "content")


async def test_a_session_answer_to_one_child_settles_the_others_question(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = _two_children_writing(tmp_path)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        client.answer = "allow_always"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("write both"))
    assert reply.stop_reason == "end_turn"
    assert len(client.questions) == 1, "the second child's write was covered by the first answer"
    _, asked = client.questions[0]
    assert asked.title.startswith("Write")
    assert any(f"asked by general (sub-agent): {which} file" in _note(asked) for which in ("first", "second"))
    assert (workspace / "a.txt").read_text() == (workspace / "b.txt").read_text() == "x\n"


async def test_each_child_is_asked_in_turn_when_answered_once(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = _two_children_writing(tmp_path)
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("write both"))
    assert reply.stop_reason == "end_turn"
    notes = sorted(_note(tool_call).splitlines()[0] for _, tool_call in client.questions)
    assert notes == ["asked by general (sub-agent): first file", "asked by general (sub-agent): second file"]
