"""Each slash command, run in the app and in the ``--plain`` REPL, reports the same thing.

Both front ends render the replies of one session layer (:mod:`monkey.session.commands`);
this runs the same commands, after the same conversation, through the real app (Pilot) and
the real REPL (a pty), and compares what each showed the person.
"""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import init_git_workspace, write_script
from tests.support.pty import spawn_repl
from tests.support.app import make_app, settle, type_and_send

pytestmark = pytest.mark.pty

TURNS = [
    {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt", "content": "hi\n"}}]},
    {"text": "Wrote notes.txt."},
    {"text": "Summary: the person asked for notes.txt and it was written."},  # for /compact
]
COMMANDS = [
    "/approvals",
    "/approvals revoke 3",
    "/approvals bogus",
    "/undo --bogus",
    "/checkpoints show 99",
    "/checkpoints bogus",
    "/resume 99",
    "/resume zzzz",
    "/model",
    "/backend nosuch",
    "/compact",
    "/copy",
    "/nosuch",
    "/undo",
    "/undo",
    "/clear",
    "/copy",
    "/mode",
    "/mode plan",
    "/mode yolo",
    "/mode next",
    "/mode",
    "/memory",
    "/skills",
    "/hooks",
    "/mcp",
    "/mcp reconnect",
    "/mcp disable nosuch",
    "/workflow",
    "/workflow nope",
    "/workflow tpdr",
    "/plan",
    "/plan",
    "/processes p9",
    "/processes frob p1",
]
"""Commands whose replies are notes (screens and lists are rendered differently on purpose)."""
_NEXT_PROMPT = re.compile(r"\n(?:\x1b\[[0-9;?]*[A-Za-z]|\r)*›")
"""A new prompt starts on a new line (redrawing the line just sent does not)."""
_CONTROL = re.compile(r"\x1b\][^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]|\r")


async def app_reports(workspace: Path, script: Path) -> list[str]:
    app = make_app(workspace, script, TURNS, "--no-approval")
    said: list[str] = []
    async with app.run_test(size=(160, 60)) as pilot:
        await type_and_send(pilot, app, "write the notes")
        await settle(pilot, app)
        for command in COMMANDS:
            before = len(app.transcript.query(".notice"))
            await type_and_send(pilot, app, command)
            await settle(pilot, app)
            notices = list(app.transcript.query(".notice"))
            if command == "/clear":
                before = 0  # the transcript was emptied, then told so
            said.append("\n".join(str(n.render()) for n in notices[before:]))
        await app.action_quit()
    return said


def repl_reports(workspace: Path, home: Path, script: Path) -> list[str]:
    child = spawn_repl(workspace, home, script, "--no-approval", columns=200)
    child.expect_exact("Type a task")
    child.sendline("write the notes")
    child.expect_exact("Wrote notes.txt.")
    said: list[str] = []
    child.expect_exact("›")
    for command in COMMANDS:
        child.sendline(command)
        child.expect_exact(command)
        child.expect(_NEXT_PROMPT)  # the prompt on a line of its own: what came before is the report
        text = _CONTROL.sub("", child.before)
        lines = [line.rstrip() for line in text.splitlines() if not line.startswith("›")]  # the line sent, redrawn
        said.append("\n".join(lines).strip())
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    return said


def _same(text: str, workspace: Path) -> str:
    """What differs between the two runs by nature: the workspace and the session id."""
    return re.sub(r"\bs[0-9a-f]{19}\b", "SESSION", text.replace(str(workspace), "WS"))


async def test_every_command_reports_the_same_in_the_app_and_the_repl(tmp_path: Path, monkey_home: Path) -> None:
    script = write_script(tmp_path / "script.json", TURNS)
    app_ws = init_git_workspace(tmp_path / "a" / "proj", tmp_path / "a")
    repl_ws = init_git_workspace(tmp_path / "r" / "proj", tmp_path / "r")
    app_said = [_same(s, app_ws) for s in await app_reports(app_ws, tmp_path / "app.json")]
    repl_said = [_same(s, repl_ws) for s in repl_reports(repl_ws, monkey_home, script)]
    assert len(app_said) == len(repl_said) == len(COMMANDS)
    for command, in_app, in_repl in zip(COMMANDS, app_said, repl_said, strict=True):
        assert in_app, f"the app said nothing for {command}"
        assert in_app == in_repl, f"{command}: the app said {in_app!r}, the REPL {in_repl!r}"
