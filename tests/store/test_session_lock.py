"""Session ownership is an OS lock: one ``--continue`` wins, the others are refused before they
run anything, and a killed owner (even one nobody has reaped yet) frees the session at once."""

from __future__ import annotations

import re
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.store.lock import SessionLock, session_locked
from tests.support.cli import invoke, monkey_env, write_script


def _agent(workspace: Path, script: Path, *flags: str) -> list[str]:
    return [
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
        *flags,
    ]


def _holder_script(tmp_path: Path) -> Path:
    code = "import time; time.sleep(30)"
    return write_script(
        tmp_path / "hold.json",
        [
            {
                "text": "Waiting.",
                "tool_calls": [{"name": "shell_execute", "arguments": {"command": f'{sys.executable} -c "{code}"'}}],
            },
            {"text": "Done."},
        ],
    )


def _started(proc: subprocess.Popen) -> str:
    """The session id once ``proc`` has started its command; "" when it ended without."""
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "tool_started":
            return event["session_id"]
    return ""


def _hold(workspace: Path, home: Path, tmp_path: Path) -> tuple[subprocess.Popen, str]:
    """A ``--continue`` that is running a long command (it owns the session meanwhile)."""
    proc = subprocess.Popen(
        _agent(workspace, _holder_script(tmp_path), "--continue", "--task", "wait"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=monkey_env(home),
    )
    sid = _started(proc)
    assert sid, "the first --continue never started its command"
    return proc, sid


@pytest.mark.subprocess
def test_concurrent_continue_one_wins_the_others_run_nothing(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    first = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(write_script(tmp_path / "s.json", [{"text": "hello"}])),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "hi",
        ],
        home=monkey_home,
    )
    assert first.returncode == 0, first.stderr
    script = _holder_script(tmp_path)
    procs = [
        subprocess.Popen(
            _agent(workspace, script, "--continue", "--task", "wait"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=monkey_env(monkey_home),
        )
        for _ in range(6)
    ]
    try:
        started = [_started(p) for p in procs]
        winners = [p for p, sid in zip(procs, started, strict=True) if sid]
        assert len(winners) == 1, f"{len(winners)} of 6 concurrent --continue ran their command"
        sid = next(s for s in started if s)
        for proc in procs:
            if proc is winners[0]:
                continue
            assert proc.wait(timeout=120) == 1
            err = proc.stderr.read().decode() if proc.stderr else ""
            # the winner writes its pid just after it takes the lock (for messages only): a loser that looks
            # in that instant finds none and says so without it; a pid it names is the winner's
            said = rf"session {sid} is open in another monkey process( \(pid {winners[0].pid}\))?; nothing was run"
            assert re.search(said, err), err
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    stored = invoke(["sessions", "export", sid], home=monkey_home).stdout.splitlines()
    assert sum('"type":"tool_started"' in line for line in stored) == 1, "only the winner stored anything"


@pytest.mark.subprocess
def test_a_killed_owner_frees_the_session_before_it_is_reaped(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    first = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(write_script(tmp_path / "s.json", [{"text": "hello"}])),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "hi",
        ],
        home=monkey_home,
    )
    assert first.returncode == 0, first.stderr
    owner, sid = _hold(workspace, monkey_home, tmp_path)
    owner.send_signal(signal.SIGKILL)
    os.waitid(os.P_PID, owner.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie with its pid
    try:
        listed = invoke(["sessions", "list", "--json"], home=monkey_home, cwd=workspace)
        assert [s["state"] for s in json.loads(listed.stdout) if s["id"] == sid] == ["interrupted"], listed.stdout
        again = invoke(
            _agent(workspace, write_script(tmp_path / "ok.json", [{"text": "back"}]), "--continue", "--task", "again")[
                3:
            ],
            home=monkey_home,
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout.splitlines()[0])["session_id"] == sid
    finally:
        owner.wait(timeout=60)
    assert not list((monkey_home / "session-locks").glob("*.lock")), "no lock file is left behind"


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    lock = SessionLock.acquire(folder, "s1")
    assert lock is not None and session_locked(folder, "s1")
    assert SessionLock.acquire(folder, "s1") is None, "a second handle, even in this process, is refused"
    lock.release()
    assert not session_locked(folder, "s1") and not (folder / "s1.lock").exists()
    again = SessionLock.acquire(folder, "s1")
    assert again is not None
    again.release()
