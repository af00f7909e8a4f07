"""``/worktree NAME`` in the ``--plain`` REPL (a pty): the session ends, a new one goes on in the new worktree."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import invoke, write_script
from tests.support.pty import spawn_repl

pytestmark = pytest.mark.pty


def test_worktree_goes_on_in_a_new_session_there(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
            {"text": "wrote a.txt"},
        ],
    )
    child = spawn_repl(workspace, monkey_home, script, "--no-approval", columns=200)
    child.expect_exact("Type a task")
    child.sendline("write it")
    child.expect_exact("wrote a.txt")
    child.sendline("/worktree bad/name")
    child.expect_exact("has '/'")
    child.sendline("/worktree feat")
    child.expect_exact("a new session starts there")
    child.expect_exact("Type a task")
    child.sendline("write it there")
    child.expect_exact("wrote a.txt")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    wt = (workspace / ".monkey" / "worktrees" / "feat").resolve()
    assert (workspace / "a.txt").read_text() == "a\n" and (wt / "a.txt").read_text() == "a\n"
    here = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    there = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(wt)], home=monkey_home).stdout)
    assert len(here) == 1 and len(there) == 1 and here[0]["id"] != there[0]["id"]
