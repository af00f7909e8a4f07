"""Without the write watch (any user but root, or ``MONKEY_NO_WRITE_WATCH=1``), undo cannot tell
a person's edit during a command from the command's: the app and the REPL say so, once."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from monkey.checkpoints.watch import DISABLE_ENV
from tests.support.cli import monkey_env, write_script
from tests.support.pty import PTY_TIMEOUT
from tests.support.watch import HAS_WATCH, SAID

pytestmark = pytest.mark.pty


def _repl(workspace: Path, home: Path, tmp_path: Path, **env: str) -> str:
    """Two turns in ``monkey agent --plain`` on a pty; everything it printed."""
    import sys

    import pexpect

    script = write_script(tmp_path / "s.json", [{"text": "answer one"}, {"text": "answer two"}])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--plain", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)],
        env=monkey_env(home, TERM="xterm", **env),
        encoding="utf-8",
        timeout=PTY_TIMEOUT,
        dimensions=(40, 200),
    )
    log = io.StringIO()
    child.logfile_read = log
    child.expect_exact("Type a task")
    child.sendline("first")
    child.expect_exact("answer one")
    child.expect_exact("›")
    child.sendline("second")
    child.expect_exact("answer two")
    child.expect_exact("›")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    return re.sub(r"\s+", " ", log.getvalue())


def test_the_repl_says_once_that_undo_cannot_tell_edits_apart(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    text = _repl(workspace, monkey_home, tmp_path, **{DISABLE_ENV: "1"})
    assert text.count(SAID) == 1, text
    assert f"({DISABLE_ENV} is set)" in text and "undoing the command reverts it" in text


@pytest.mark.skipif(not HAS_WATCH, reason="needs fanotify and the process connector (root on Linux)")
def test_where_the_watch_runs_nothing_is_said(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    assert SAID not in _repl(workspace, monkey_home, tmp_path)
