"""Fault injection: ``kill -9`` at every event boundary of a scripted multi-tool run.

For each event index i, a real ``monkey agent --task`` (stream-json, scripted backend, no
approval) runs as a subprocess; the test reads its stdout line by line and, right after the
i-th line, kills it with SIGKILL and reaps it. Then every event the run printed must be in
the store (streaming text deltas excepted: their text is stored with their
``message_completed``), and undoing the session's changes must give back the workspace
byte for byte. The kill happens at a line boundary the test reads: no timing involved.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import init_git_workspace, invoke, monkey_env, stored_events, write_script

pytestmark = pytest.mark.subprocess

STREAMING = {"text_delta", "thinking_delta"}

TURNS = [
    {
        "text": "Writing the new file.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "new.txt", "content": "fresh\n"}}],
    },
    {
        "text": "Editing the readme and copying it.",
        "tool_calls": [
            {"name": "file_edit", "arguments": {"path": "README.md", "old": "# proj", "new": "# project"}},
            {"name": "shell_execute", "arguments": {"command": "cp notes.txt copy.txt"}},
        ],
    },
    {"text": "Removing the old notes.", "tool_calls": [{"name": "file_delete", "arguments": {"path": "notes.txt"}}]},
    {"text": "All done."},
]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (the user's .git included)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _stored(home: Path, session_id: str) -> list[bytes]:
    conn = sqlite3.connect(home / "monkey.db")
    try:
        return [data for _, data in stored_events(conn, session_id)]
    finally:
        conn.close()


def _run_and_kill(args: list[str], home: Path, after: int | None) -> list[bytes]:
    """Run monkey; SIGKILL it right after the ``after``-th stdout line (None: let it finish).
    Returns the lines read (without newlines)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "monkey", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=monkey_env(home),
    )
    assert proc.stdout is not None
    lines: list[bytes] = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip(b"\n"))
            if after is not None and len(lines) == after:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.stdout.close()
        proc.wait(timeout=60)  # reaped
    return lines


def _events_of(lines: list[bytes]) -> list[dict]:
    return [json.loads(line) for line in lines]


@pytest.fixture
def task(tmp_path: Path, monkey_home: Path):  # type: ignore[no-untyped-def]
    """A fresh workspace per run: ``(args, workspace)``."""
    count = [0]

    def make() -> tuple[list[str], Path]:
        count[0] += 1
        ws = init_git_workspace(tmp_path / f"ws{count[0]}", tmp_path)
        (ws / "notes.txt").write_bytes(b"old notes\r\nwith a CRLF and no end")
        script = write_script(tmp_path / "script.json", TURNS)
        return (
            [
                "agent",
                "--backend",
                "scripted",
                "--script",
                str(script),
                "--cwd",
                str(ws),
                "--output-format",
                "stream-json",
                "--no-approval",
                "--task",
                "tidy up",
            ],
            ws,
        )

    return make


@pytest.mark.timeout(900)  # a real monkey killed at each of its events, one after another
def test_kill_at_every_event_boundary_loses_nothing_shown_and_undo_restores(task, monkey_home: Path) -> None:
    args, ws = task()
    full = _run_and_kill(args, monkey_home, None)
    kinds = [e["type"] for e in _events_of(full)]
    assert kinds[0] == "session_started" and kinds[-1] == "session_ended", kinds
    assert kinds.count("tool_result") == 4 and "checkpoint_created" in kinds
    boundaries = range(1, len(full))  # the last line is the end: nothing left to lose after it
    assert 20 <= len(boundaries) <= 60, len(full)
    for i in boundaries:
        args, ws = task()
        before = _tree(ws)
        printed = _run_and_kill(args, monkey_home, i)
        assert len(printed) == i, f"kill {i}: the run ended early"
        sid = json.loads(printed[0])["session_id"]
        stored = _stored(monkey_home, sid)
        shown = [line for line in printed if json.loads(line)["type"] not in STREAMING]
        kept = [line for line in stored if json.loads(line)["type"] not in STREAMING]
        assert kept[: len(shown)] == shown, (
            f"kill after event {i} ({kinds[i - 1]}): events printed but not stored: "
            f"{[json.loads(x)['type'] for x in shown if x not in kept]}"
        )
        for n, msg in enumerate(e for e in _events_of(printed) if e["type"] == "message_completed"):
            assert msg["text"] == TURNS[n]["text"], "streamed text is stored whole with its message"
        undo = invoke(["undo", "--session", sid, "--cwd", str(ws)], home=monkey_home)
        assert undo.returncode == 0 or "nothing to undo" in undo.stderr, (i, undo.stderr)
        assert _tree(ws) == before, f"kill after event {i} ({kinds[i - 1]}): undo did not restore the workspace"
