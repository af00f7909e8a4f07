"""Small things a newcomer trips over: a session's title is what they typed (not the file an
``@path`` attached, nor the prompt a ``/command`` sent), monkey's own prompts are not shown as if
they typed them, and one turn is "1 turn"."""

from __future__ import annotations

from pathlib import Path

from monkey.cli import run_command
from monkey.ui.widgets.transcript import MAX_BLOCKS
from tests.support.cli import write_script
from tests.support.app import settle, type_and_send


def users(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(w.render()) for w in app.transcript.query(".user")]


async def titles(workspace: Path, capsys) -> str:  # type: ignore[no-untyped-def]
    import asyncio

    capsys.readouterr()
    assert (
        await asyncio.to_thread(run_command, ["sessions", "list", "--cwd", str(workspace)]) == 0
    )  # its own event loop
    return capsys.readouterr().out


async def test_the_title_is_what_was_typed_not_the_attached_file(app_for, workspace: Path, capsys) -> None:
    (workspace / "README.md").write_text("SECRET-LOOKING FILE CONTENT\n")
    app = app_for([{"text": "It is a readme."}])
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, app, "what is in @README.md")
        await settle(pilot, app)
    listed = await titles(workspace, capsys)
    assert "what is in @README.md" in listed and "SECRET-LOOKING" not in listed
    assert " 1 turn " in listed and "1 turns" not in listed


async def test_a_commands_prompt_is_not_shown_as_typed_and_titles_the_session_by_the_command(
    app_for, workspace: Path, capsys
) -> None:
    app = app_for([{"text": "I wrote AGENTS.md."}])
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, app, "/init")
        await settle(pilot, app)
        assert users(app) == [], users(app)
        notes = [str(w.render()) for w in app.transcript.query(".notice")]
        assert any(n.startswith("/init: asking the model") for n in notes)
        assert app.agent.messages[0].role == "user" and "AGENTS.md" in app.agent.messages[0].content
    listed = await titles(workspace, capsys)
    assert "/init" in listed and "AGENTS.md for this project" not in listed


async def test_one_earlier_turn_is_one_turn(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=(120, 36)) as pilot:
        keep = MAX_BLOCKS // 2 - 1
        app.transcript.load_history([(f"q{i}", f"a{i}") for i in range(keep + 1)])
        await pilot.pause(0.1)
        said = str(app.transcript.query(".earlier").first().render())
        assert said.startswith("… 1 earlier turn not shown") or said.startswith("… 1 earlier turn ·"), said


def test_resuming_a_one_turn_session_says_1_turn(workspace: Path, tmp_path: Path, capsys) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}])
    base = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)]
    assert run_command([*base, "--task", "first"]) == 0
    capsys.readouterr()
    assert run_command([*base, "--continue", "--task", "second"]) == 0
    err = capsys.readouterr().err
    assert "2 messages, 1 turn," in err, err
