"""The plan question on a real terminal (pexpect): ``--task --mode plan`` and ``/plan`` in ``--plain``."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.support.cli import write_script
from tests.support.pty import spawn_repl, spawn_task

pytestmark = pytest.mark.pty

PLAN = "# Plan\n\n1. Write hello.txt.\n2. Check it."


def plan_script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "s.json",
        [
            {"text": "My plan.", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
            {"text": "All done."},
        ],
    )


def test_inline_plan_approved_goes_on_accepting_edits(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_task(workspace, monkey_home, plan_script(tmp_path), "--mode", "plan")
    child.expect_exact("the model proposes a plan")
    child.expect_exact("1. Write hello.txt.")
    child.expect_exact("plan? [a/d/f/r]")
    child.sendline("as")
    child.expect_exact("All done.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert (workspace / "hello.txt").read_text() == "hi\n"  # accept-edits: no question for the write
    [kept] = list((workspace / ".monkey" / "plans").iterdir())
    assert kept.read_text() == PLAN + "\n"


def test_inline_plan_rejected_stops_and_changes_nothing(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_task(workspace, monkey_home, plan_script(tmp_path), "--mode", "plan")
    child.expect_exact("plan? [a/d/f/r]")
    child.sendline("r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 4  # the person stopped the turn
    assert "rejected" in child.before
    assert not (workspace / "hello.txt").exists() and not (workspace / ".monkey").exists()


def test_plan_command_in_the_line_repl_then_approve_in_default_mode(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    child = spawn_repl(workspace, monkey_home, plan_script(tmp_path))
    child.expect_exact("Type a task")
    child.sendline("/plan greet the world")
    child.expect_exact("mode: plan")
    child.expect_exact("plan? [a/d/f/r]")
    child.sendline("d")
    child.expect_exact("allow? [y/a/f/n]")  # default mode: the write asks
    child.sendline("y")
    child.expect_exact("All done.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert (workspace / "hello.txt").read_text() == "hi\n"


def test_workflow_command_in_the_line_repl(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "w.json",
        [
            {"text": "The README is one line."},
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
    child = spawn_repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("/workflow tpdr greet")
    child.expect_exact("── think (iteration 1) ──")
    child.expect_exact("plan? [a/d/f/r]")
    child.sendline("a")
    child.expect_exact("── reflect ended: done: hello.txt is there")
    child.expect_exact("ended: done (hello.txt is there)")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert (workspace / "hello.txt").read_text() == "hi\n"
