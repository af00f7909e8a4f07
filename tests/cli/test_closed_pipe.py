"""Every command ends quietly, with 141 (128 + SIGPIPE), when the reader of its stdout is gone
(``monkey undo | true``): a real pipe whose read end was closed before the command wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import monkey_env
from tests.support.script import call

pytestmark = pytest.mark.subprocess  # a real pipe whose reader is gone, and the exit status of a real process


def _closed_pipe_run(args: list[str], workspace: Path, home: Path) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before monkey writes a byte
    try:
        return subprocess.run(
            [sys.executable, "-m", "monkey", *args],
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=monkey_env(home),
            cwd=workspace,
            timeout=120,
        )
    finally:
        os.close(write)


def _quiet(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 141, run.stderr
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr and "Broken pipe" not in run.stderr
    assert "Exception ignored" not in run.stderr and run.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ["plugins", "list"],
        ["plugins", "info", "openai-compat"],
        ["workflows", "list"],
        ["sessions", "list"],
        ["checkpoints"],
    ],
)
def test_a_listing_ends_quietly_on_a_closed_pipe(args: list[str], workspace: Path, monkey_home: Path) -> None:
    _quiet(_closed_pipe_run(args, workspace, monkey_home))


def test_undo_into_a_closed_pipe_still_undoes_and_ends_quietly(scripted, workspace: Path, monkey_home: Path) -> None:
    wrote = scripted(
        [{"tool_calls": [call("file_write", path="a.txt", content="x")]}, {"text": "done"}], "--no-approval"
    )
    assert wrote.returncode == 0 and (workspace / "a.txt").exists(), wrote.stderr
    _quiet(_closed_pipe_run(["undo"], workspace, monkey_home))
    assert not (workspace / "a.txt").exists()
