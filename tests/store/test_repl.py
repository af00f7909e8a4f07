"""The plain REPL on a real terminal: the session is stored, ``/compact`` summarises it, and
``monkey agent --continue`` opens it again."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.support.cli import invoke, write_script
from tests.support.pty import spawn_repl

pytestmark = pytest.mark.pty


def _repl(workspace: Path, home: Path, script: Path, *flags: str) -> pexpect.spawn:
    return spawn_repl(workspace, home, script, *flags)


def test_repl_compact_and_continue(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    words = "many words about the project " * 40
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "First answer. " + words},
            {"text": "Second answer. " + words},
            {"text": "Third answer."},
            {"text": "Summary: three questions were asked about the project."},
        ],
    )
    child = _repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    for question, answer in (("one?", "First answer."), ("two?", "Second answer."), ("three?", "Third answer.")):
        child.sendline(question)
        child.expect_exact(answer)
    child.sendline("/compact")
    child.expect(r"compacted (\d+) messages: (\d+) → (\d+) tokens")
    compacted, before, after = (int(g) for g in child.match.groups())
    assert compacted >= 2 and after < before
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    listing = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert '"turns": 3' in listing.stdout and '"state": "completed"' in listing.stdout
    again = write_script(tmp_path / "again.json", [{"text": "Welcome back."}])
    child = _repl(workspace, monkey_home, again, "--continue")
    child.expect(r"resumed session \S+ \((\d+) messages, 3 turns")
    assert int(child.match.group(1)) < 6, "the compacted conversation is what comes back"
    child.sendline("four?")
    child.expect_exact("Welcome back.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_resume_without_id_asks_which(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    for prompt in ("first task", "second task"):
        script = write_script(tmp_path / "s.json", [{"text": f"done: {prompt}"}])
        assert (
            invoke(
                ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", prompt],
                home=monkey_home,
            ).returncode
            == 0
        )
    script = write_script(tmp_path / "r.json", [{"text": "Back in the first one."}])
    child = _repl(workspace, monkey_home, script, "--resume")
    child.expect_exact("Recent sessions of this workspace:")
    child.expect_exact("second task")
    child.expect_exact("first task")
    child.expect_exact("resume which?")
    child.sendline("2")
    child.expect(r"resumed session \S+ \(2 messages, 1 turn,")
    child.expect_exact("Type a task")
    child.sendline("where was I?")
    child.expect_exact("Back in the first one.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
