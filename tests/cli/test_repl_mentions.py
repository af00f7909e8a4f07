"""``@path`` and ``!command`` in the ``--plain`` REPL: as in the app."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import invoke, write_script
from tests.support.pty import spawn_repl

pytestmark = pytest.mark.pty


def test_a_mention_attaches_the_file_in_the_repl(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "A title."}]))
    child.expect_exact("Type a task")
    child.sendline("what is @README.md about")
    child.expect_exact("attached README.md (1 line)")
    child.expect_exact("A title.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    listing = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    export = invoke(["sessions", "export", listing[0]["id"], "--format", "jsonl"], home=monkey_home).stdout
    [started] = [json.loads(line) for line in export.splitlines() if '"turn_started"' in line]
    assert started["prompt"].startswith("what is @README.md about\n\n")
    assert '<file path="README.md">\n# proj\n</file>' in started["prompt"]


def test_a_bang_command_runs_in_the_repl_and_is_undoable(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "It says hi."}]))
    child.expect_exact("Type a task")
    child.sendline("!echo hi > hand.txt && cat hand.txt")
    child.expect_exact("hi")
    child.sendline("what does it say?")
    child.expect_exact("It says hi.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert (workspace / "hand.txt").read_text() == "hi\n"
    listing = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    export = invoke(["sessions", "export", listing[0]["id"], "--format", "jsonl"], home=monkey_home).stdout
    prompts = [json.loads(line)["prompt"] for line in export.splitlines() if '"turn_started"' in line]
    assert prompts == ["!echo hi > hand.txt && cat hand.txt", "what does it say?"]
    assert invoke(["undo", "--cwd", str(workspace)], home=monkey_home).returncode == 0
    assert not (workspace / "hand.txt").exists()
