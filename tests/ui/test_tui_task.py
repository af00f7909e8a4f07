"""``monkey agent --tui --task``: the task runs in the app, which closes when it is done, leaves
the answer on the terminal and exits with the task's status (on a real pty)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import monkey_env, write_script
from tests.support.pty import PTY_TIMEOUT

pytestmark = pytest.mark.pty


def _tui_task(workspace: Path, home: Path, script: Path) -> tuple[int, str]:
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "monkey",
            "agent",
            "--tui",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "greet me",
        ],
        env=monkey_env(home, TERM="xterm-256color"),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )
    child.expect(pexpect.EOF)  # it exits by itself: nobody presses a key
    child.close()
    return child.exitstatus, child.before.decode(errors="replace")


def test_the_app_closes_when_the_task_is_done_and_leaves_the_answer(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "Hello from the app, all done."}])
    status, out = _tui_task(workspace, monkey_home, script)
    assert status == 0, out
    assert "\x1b[?1049h" in out  # it did run full screen
    after = out.rsplit("\x1b[?1049l", 1)[-1]  # what stays on the terminal once the screen is restored
    assert "Hello from the app, all done." in after


@pytest.mark.parametrize(
    ("turns", "code", "says"),
    [
        ([{"error": "the server is on fire", "error_kind": "invalid_request"}], 1, "the server is on fire"),
        ([{"tool_calls": [{"name": "file_read", "arguments": {"path": "README.md"}}]}] * 3, 3, "--max-iterations 2"),
        ([{"text": "Half an answ", "stop_reason": "max_tokens"}], 0, "the answer was cut off"),
    ],
)
def test_the_exit_status_is_the_tasks(
    workspace: Path, monkey_home: Path, tmp_path: Path, turns: list, code: int, says: str
) -> None:
    (monkey_home / "config.toml").write_text("[agent]\nmax_iterations = 2\n")
    status, out = _tui_task(workspace, monkey_home, write_script(tmp_path / "s.json", turns))
    assert status == code, out
    assert says in out.rsplit("\x1b[?1049l", 1)[-1]
