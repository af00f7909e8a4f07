"""A person answers a plugin's tool calls on the terminal (a real pty), as for any model's call."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import monkey_env
from tests.support.plugins import WRITE, results
from tests.support.pty import PTY_TIMEOUT

pytestmark = pytest.mark.pty


def spawn(workspace: Path, home: Path, name: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--backend", f"plugin:{name}", "--task", "go", "--cwd", str(workspace)],
        env=monkey_env(home, TERM="xterm"),
        encoding="utf-8",
        timeout=PTY_TIMEOUT,
        dimensions=(40, 120),
    )


def test_a_person_approves_one_call_and_refuses_another_with_a_reason(install, workspace: Path, monkey_home: Path):
    plugin = install(
        "writer",
        [
            WRITE,
            {"tool_use": {"id": "t2", "name": "file_delete", "input": {"path": "README.md"}}},
            {"text": "Left the README alone."},
        ],
    )
    child = spawn(workspace, monkey_home, "writer")
    child.expect_exact("file_write needs approval")
    child.expect_exact("+from the plugin")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("file_delete needs approval")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("n")
    child.expect_exact("tell the model why")
    child.sendline("keep the readme")
    child.expect_exact("Left the README alone.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workspace / "notes.txt").read_text() == "from the plugin\n"
    assert (workspace / "README.md").exists()
    wrote, deleted = results(plugin)
    assert wrote["is_error"] is False
    assert deleted["is_error"] is True and "keep the readme" in deleted["result"]


def test_ctrl_c_at_the_question_ends_the_plugins_run(install, workspace: Path, monkey_home: Path):
    plugin = install("writer", [WRITE, {"text": "never said"}])
    child = spawn(workspace, monkey_home, "writer")
    child.expect_exact("allow? [y/a/f/n]")
    started = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 4, child.before  # Ctrl-C at the question refuses the call and stops the turn
    assert "never said" not in child.before
    assert not (workspace / "notes.txt").exists()
    assert plugin.saw_eof() and results(plugin) == []  # its stdin closed, no result for the call it asked
    assert time.monotonic() - started < 30
