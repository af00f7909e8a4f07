"""A tool call killed while it runs is given back, on ``--continue``, as 'interrupted: may have
run' with what the checkpoint journal recorded of its effect, never as 'not run'."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import invoke, monkey_env, write_script

pytestmark = pytest.mark.subprocess


def _wait_for(check, what: str, deadline: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _start_making(workspace: Path, home: Path, tmp_path: Path, stderr: int) -> subprocess.Popen[bytes]:
    """``monkey agent --task`` whose one (scripted) call writes made.txt and then sleeps 30 s."""
    code = "open('made.txt', 'w').write('made'); import time; time.sleep(30)"
    command = f'{sys.executable} -c "{code}"'
    script = write_script(
        tmp_path / "one.json",
        [
            {"text": "Making it.", "tool_calls": [{"name": "shell_execute", "arguments": {"command": command}}]},
            {"text": "Done."},
        ],
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--no-approval",
            "--task",
            "make it",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=monkey_env(home),
    )


def _stored_tools(home: Path, session_id: str) -> list[dict]:
    """The tool results the session's stored conversation holds, in order."""
    conn = sqlite3.connect(home / "monkey.db")
    try:
        return [
            json.loads(bytes(r[0]))
            for r in conn.execute(
                "SELECT data FROM nodes WHERE session_id = ? AND kind = 'tool' ORDER BY seq", (session_id,)
            )
        ]
    finally:
        conn.close()


def test_call_killed_while_running_resumes_as_interrupted_with_its_effect(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    proc = _start_making(workspace, monkey_home, tmp_path, subprocess.PIPE)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["type"] == "tool_started":
            break
    assert seen[-1]["type"] == "tool_started", (seen, proc.stderr.read() if proc.stderr else "")
    _wait_for(lambda: (workspace / "made.txt").exists(), "the command's effect")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    sid = seen[0]["session_id"]

    then = write_script(tmp_path / "two.json", [{"text": "I see it was interrupted."}])
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(then),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--no-approval",
            "--continue",
            "--task",
            "go on",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    assert "was interrupted and may have run" in run.stderr and "made.txt" in run.stderr, run.stderr
    assert "not run" not in run.stderr, run.stderr
    tools = _stored_tools(monkey_home, sid)
    assert len(tools) == 1, tools
    sent = tools[0]["content"]
    assert sent.startswith("interrupted: may have run"), sent
    assert "made.txt" in sent and "monkey undo reverts it" in sent, sent


def test_call_cancelled_while_running_is_kept_as_interrupted(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """Ctrl-C while a command runs: the stored conversation says it may have run (it did)."""
    proc = _start_making(workspace, monkey_home, tmp_path, subprocess.DEVNULL)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["type"] == "tool_started":
            _wait_for(lambda: (workspace / "made.txt").exists(), "the command's effect")
            proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert [e["reason"] for e in seen if e["type"] == "turn_completed"] == ["cancelled"]
    tools = _stored_tools(monkey_home, seen[0]["session_id"])
    assert [t["content"][:25] for t in tools] == ["interrupted: may have run"], tools
