"""A folder nobody trusted: what it holds and monkey does not use is said once, with how to
trust it and what that turns on (also in ``monkey trust --help``); ``/NAME`` of one of its skills
says why it does not run. In-process: the CLI's ``main`` and the app on the scripted backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.cli import main
from monkey.trust import TRUST_TURNS_ON, trust
from tests.support.cli import write_script
from tests.support.app import settle, type_and_send


def furnish(ws: Path) -> None:
    (ws / "AGENTS.md").write_text("Write tests first.\n")
    skill = ws / ".monkey" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write the release notes.\n---\nRead CHANGELOG.md and write the notes.\n"
    )
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "true"}}}))


def run_task(ws: Path, tmp_path: Path, capsys) -> str:  # type: ignore[no-untyped-def]
    script = write_script(tmp_path / "s.json", [{"text": "done"}])
    assert main(["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(ws), "--task", "hello"]) == 0
    return capsys.readouterr().err


def test_task_says_once_what_an_untrusted_folder_holds_and_how_to_trust_it(
    workspace: Path, tmp_path: Path, capsys
) -> None:
    furnish(workspace)
    err = run_task(workspace, tmp_path, capsys)
    lines = [line for line in err.splitlines() if "did not use" in line]
    assert len(lines) == 1, err
    [line] = lines
    for found in ("AGENTS.md", "skill /release-notes", ".mcp.json"):
        assert found in line
    assert f"monkey trust {workspace}" in line
    assert all(item in line for item in TRUST_TURNS_ON)


def test_nothing_is_said_in_a_trusted_folder_or_an_empty_one(
    workspace: Path, tmp_path: Path, capsys, monkey_home: Path
) -> None:
    assert "did not use" not in run_task(workspace, tmp_path, capsys)
    furnish(workspace)
    trust(workspace, monkey_home)
    assert "did not use" not in run_task(workspace, tmp_path, capsys)


def test_trust_help_lists_everything_trusting_turns_on(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["trust", "--help"])
    out = capsys.readouterr().out
    for item in TRUST_TURNS_ON:
        assert " ".join(item.split()) in " ".join(out.split())


async def test_the_app_says_it_and_an_untrusted_skills_command_says_why_it_does_not_run(app_for, workspace) -> None:  # noqa: F811 (a fixture)
    furnish(workspace)
    app = app_for([{"text": "x"}])
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        notices = lambda: [str(w.render()) for w in app.transcript.query(".notice")]  # noqa: E731
        assert sum("did not use" in n and "skill /release-notes" in n for n in notices()) == 1
        await type_and_send(pilot, app, "/release-notes")
        await settle(pilot, app)
        said = notices()[-1]
        assert "/release-notes is a skill of this project, which is not trusted" in said and "monkey trust" in said
        await type_and_send(pilot, app, "/no-such-thing")
        await settle(pilot, app)
        assert "unknown command /no-such-thing" in notices()[-1]
