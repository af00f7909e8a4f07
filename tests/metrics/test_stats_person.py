"""A person on a real terminal (the ``--plain`` REPL on a pty): a refusal, an approval, an undo and
``/stats``; then ``monkey stats --json`` says exactly that."""

from __future__ import annotations

import pytest

import json
from pathlib import Path

import pexpect

from tests.support.checkpoints import write_script

from tests.support.cli import invoke
from tests.support.pty import refuse_without_reason, spawn_repl

pytestmark = pytest.mark.pty

WRITE = {"name": "file_write", "arguments": {"path": "b.txt", "content": "x\ny\n"}}


def test_a_persons_answers_and_undo_are_counted(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [WRITE], "usage": {"input_tokens": 500, "output_tokens": 10, "cost_usd": 0.25}},
            {
                "text": "",
                "tool_calls": [WRITE],
                "usage": {"input_tokens": 700, "output_tokens": 10, "cost_usd": 0.0625},
            },
            {"text": "Written now.", "usage": {"input_tokens": 800, "output_tokens": 5, "cost_usd": 0.03125}},
        ],
    )
    child = spawn_repl(workspace, monkey_home, script, timeout=60)
    child.expect_exact("Type a task")
    child.expect_exact("›")  # the prompt reads what is typed from here on
    child.sendline("write b")
    child.expect_exact("allow? [y/a/f/n]")
    refuse_without_reason(child)  # a person's refusal ends the turn
    child.expect_exact("›")
    child.sendline("write b please")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("Written now.")
    assert (workspace / "b.txt").read_text() == "x\ny\n"
    child.sendline("/undo")
    child.expect_exact("undone:")
    assert not (workspace / "b.txt").exists()
    child.sendline("/stats")
    child.expect(r"this session: [^\r\n]*lines")
    said = " ".join(child.after.split())  # the terminal may wrap the line
    assert said == (
        "this session: 2 turns, 3 model calls, 2,000 tokens in (0% from the cache), 25 out, $0.34; 2 tool calls "
        "(1 ok, 0 failed, 1 denied, 0 cancelled); +2 -0 lines"
    ), said
    child.expect_exact("today, 1 session in every workspace: 2 turns")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    run = invoke(["stats", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 0, run.stderr
    t = json.loads(run.stdout)["totals"]
    assert (t["turns"], t["model_calls"], t["cost_micros"]) == (2, 3, 343_750)
    assert t["tools"] | {"duration_ms": None} == {
        "calls": 2,
        "ok": 1,
        "failed": 0,
        "denied_rule": 0,
        "denied_person": 1,
        "cancelled": 0,
        "duration_ms": None,
    }
    approvals = t["approvals"]
    assert (approvals["asked"], approvals["answered"]) == (2, 2)
    assert approvals["answers"] == {"approved": 1, "approved_session": 0, "approved_always": 0, "denied": 1}
    assert 0 < approvals["answer_ms"]["p50"] <= approvals["answer_ms"]["p95"]
    assert t["changes"] == {"lines_added": 2, "lines_removed": 0, "files_changed": 1, "undos": 1}


def test_a_call_stopped_by_ctrl_c_is_counted_cancelled(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    from tests.support.pty import sleeper_script, spawn_task

    child = spawn_task(workspace, monkey_home, sleeper_script(tmp_path))
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("tool is running")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    run = invoke(["stats", "--json", "--cwd", str(workspace), "--by", "tool"], home=monkey_home)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    tools = got["totals"]["tools"]
    assert (tools["calls"], tools["cancelled"], tools["ok"], tools["failed"]) == (1, 1, 0, 0)
    assert tools["duration_ms"] == {"p50": None, "p95": None}  # it never ended
    assert got["totals"]["approvals"]["answers"]["approved"] == 1
    assert [(g["key"], g["tools"]["cancelled"]) for g in got["groups"]] == [("shell_execute", 1)]
