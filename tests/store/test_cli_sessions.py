"""The session store through the real CLI: --continue, --resume, ``monkey sessions``, kill -9,
eight processes at once, and database files that are damaged, newer or old."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey.store.schema import MIGRATIONS as STORE_MIGRATIONS
from tests.support.cli import invoke, monkey_env, run_monkey, stored_events, write_script
from tests.support.pty import PTY_TIMEOUT


def _agent(script: Path, ws: Path, *flags: str) -> list[str]:
    return [
        "agent",
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--cwd",
        str(ws),
        "--output-format",
        "stream-json",
        *flags,
    ]


def test_continue_resume_and_sessions_commands(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    first = write_script(
        tmp_path / "1.json",
        [
            {"text": "Reading.", "tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]},
            {"text": "It says alpha.\u001b]0;pwned\u0007"},
        ],
    )
    run = invoke(_agent(first, workspace, "--task", "what is in a.txt?"), home=monkey_home)
    assert run.returncode == 0, run.stderr
    sid = run.events[0]["session_id"]
    exported = invoke(["sessions", "export", sid], home=monkey_home)
    assert exported.returncode == 0 and exported.stdout == run.stdout, "export prints what stream-json printed"

    second = write_script(tmp_path / "2.json", [{"text": "You asked about a.txt."}])
    cont = invoke(_agent(second, workspace, "--continue", "--task", "what did I ask?"), home=monkey_home)
    assert cont.returncode == 0, cont.stderr
    assert cont.events[0]["session_id"] == sid and cont.events[0]["resumed"] is True
    assert f"resumed session {sid} (4 messages, 1 turn," in cont.stderr
    assert cont.of_type("turn_started")[0]["turn"] == 2

    other = invoke(_agent(second, workspace, "--task", "a new session"), home=monkey_home)
    by_id = invoke(_agent(second, workspace, "--resume", sid[:12], "--task", "again"), home=monkey_home)
    assert by_id.returncode == 0 and by_id.events[0]["session_id"] == sid
    picked = invoke(_agent(second, workspace, "--resume", "--task", "x"), home=monkey_home)
    assert picked.returncode == 2 and "needs a session id" in picked.stderr and sid in picked.stderr
    both = invoke(_agent(second, workspace, "--resume", sid, "--continue", "--task", "x"), home=monkey_home)
    assert both.returncode == 2 and "contradict" in both.stderr

    listing = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    rows = json.loads(listing.stdout)
    assert [r["id"] for r in rows] == [sid, other.events[0]["session_id"]]
    assert rows[0]["turns"] == 3 and rows[0]["state"] == "completed" and rows[0]["title"] == "what is in a.txt?"
    assert invoke(["sessions", "list", "--cwd", str(tmp_path)], home=monkey_home).stdout.startswith("no sessions")
    assert sid in invoke(["sessions", "list", "--all"], home=monkey_home).stdout
    shown = invoke(["sessions", "show", sid], home=monkey_home)
    assert "integrity  intact" in shown.stdout and "It says alpha." in shown.stdout
    markdown = invoke(["sessions", "export", sid, "--format", "markdown"], home=monkey_home).stdout
    assert "## User (turn 1)\n\nwhat is in a.txt?" in markdown and "### file_read (ok)" in markdown
    assert "\x1b" not in markdown and "\x07" not in markdown and "pwned" in markdown, "escapes are shown, not run"
    assert "\\u001b" in exported.stdout, "jsonl keeps the exact text, JSON-escaped"

    assert invoke(["sessions", "rm", sid], home=monkey_home).returncode == 0
    gone = invoke(["sessions", "show", sid], home=monkey_home)
    assert gone.returncode == 1 and "no session" in gone.stderr
    conn = sqlite3.connect(monkey_home / "monkey.db")
    assert conn.execute("SELECT count(*) FROM events WHERE session_id = ?", (sid,)).fetchone() == (0,)
    conn.execute("UPDATE sessions SET updated = updated - 10 * 86400")
    conn.commit()
    pruned = invoke(["sessions", "prune", "--older-than", "7"], home=monkey_home)
    assert pruned.returncode == 0 and "deleted 1 session" in pruned.stdout
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def _start(args: list[str], home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "monkey", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(home),
    )


@pytest.mark.subprocess
def test_kill_9_mid_turn_then_continue(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    release = tmp_path / "release"  # the second call's command waits for it: the turn is mid-way until the kill
    wait = f"import os, time; any(os.path.exists({str(release)!r}) or time.sleep(0.05) for _ in range(2400))"
    script = write_script(
        tmp_path / "slow.json",
        [
            {"text": "Reading the file first.", "tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]},
            {
                "text": " ".join(f"word{i}" for i in range(600)),
                "tool_calls": [
                    {
                        "name": "shell_execute",
                        "arguments": {"command": f"{sys.executable} -c {json.dumps(wait)}", "timeout": 120},
                    }
                ],
            },
        ],
    )
    proc = _start(_agent(script, workspace, "--no-approval", "--task", "read a.txt slowly"), monkey_home)
    assert proc.stdout is not None
    seen = []
    try:
        for line in proc.stdout:
            seen.append(json.loads(line))
            if seen[-1]["type"] == "tool_started" and seen[-1]["name"] == "shell_execute":
                break  # well into the second model call, and it stays there until killed
        busy = invoke(_agent(script, workspace, "--continue", "--task", "me too"), home=monkey_home)
        assert busy.returncode == 1 and f"open in another monkey process (pid {proc.pid})" in busy.stderr
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        release.write_text("")
        proc.kill()
    sid = seen[0]["session_id"]
    conn = sqlite3.connect(monkey_home / "monkey.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = [(kind,) for kind, _ in stored_events(conn, sid)]
    assert ("tool_result",) in stored and ("iteration_started",) in stored
    assert len(stored) >= len(seen) - 40, "at most the in-flight partial text is lost"
    conn.close()

    listing = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert json.loads(listing.stdout)[0]["state"] == "interrupted"
    again = write_script(tmp_path / "again.json", [{"text": "Done now."}])
    cont = run_monkey(_agent(again, workspace, "--continue", "--task", "go on"), home=monkey_home)
    assert cont.returncode == 0, cont.stderr
    assert cont.events[0]["session_id"] == sid and "damaged" not in cont.stderr
    shown = invoke(["sessions", "show", sid], home=monkey_home).stdout
    assert "alpha" in shown and "go on" in shown and "integrity  intact" in shown


@pytest.mark.subprocess
def test_eight_processes_at_once(tmp_path: Path, monkey_home: Path) -> None:
    text = " ".join(f"w{i}" for i in range(900))  # 300 text deltas per model call
    script = write_script(
        tmp_path / "many.json",
        [
            {"text": text, "tool_calls": [{"name": "list_directory", "arguments": {}}]},
            {"text": text},
        ],
    )
    procs = []
    for i in range(8):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        procs.append(_start(_agent(script, ws, "--task", f"task {i}"), monkey_home))
    outputs = [p.communicate(timeout=120) for p in procs]
    conn = sqlite3.connect(monkey_home / "monkey.db")
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err
        lines = [line for line in out.splitlines() if line]
        sid = json.loads(lines[0])["session_id"]
        stored = [data.decode() for _, data in stored_events(conn, sid)]
        assert stored == lines, "every event kept, in order"
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (8,)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_damaged_and_newer_databases_are_reported_not_overwritten(scripted, monkey_home: Path) -> None:
    assert scripted([{"text": "hi"}]).returncode == 0
    path = monkey_home / "monkey.db"
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_migrations SET version = 99 WHERE component = 'store'")
    conn.commit()
    conn.close()
    before = _digest(path)
    run = scripted([{"text": "hi"}])
    assert run.returncode == 1 and "newer monkey" in run.stderr and "upgrade monkey" in run.stderr
    assert invoke(["sessions", "list"], home=monkey_home).returncode == 1
    assert _digest(path) == before

    path.write_bytes(b"this is not a database at all" * 100)
    before = _digest(path)
    run = scripted([{"text": "hi"}])
    assert run.returncode == 1 and "damaged" in run.stderr and str(path) in run.stderr
    listing = invoke(["sessions", "list"], home=monkey_home)
    assert listing.returncode == 1 and "damaged" in listing.stderr
    assert _digest(path) == before, "a damaged file is never overwritten"


def test_truncated_database_is_reported(scripted, monkey_home: Path) -> None:
    for _ in range(3):
        assert scripted([{"text": "x " * 3000}]).returncode == 0
    path = monkey_home / "monkey.db"
    data = path.read_bytes()
    assert len(data) > 16384
    path.write_bytes(data[: len(data) // 2])
    for name in ("monkey.db-wal", "monkey.db-shm"):
        (monkey_home / name).unlink(missing_ok=True)
    before = _digest(path)
    listing = invoke(["sessions", "list", "--all"], home=monkey_home)
    run = scripted([{"text": "hi"}], "--continue")
    assert listing.returncode == 1 or run.returncode == 1, (listing, run)
    for r in (listing, run):
        if r.returncode:
            assert "Traceback" not in r.stderr and "monkey:" in r.stderr
    assert _digest(path) == before


def test_an_old_database_is_upgraded(monkey_home: Path, scripted) -> None:
    """A database made before sessions were stored (only another component's tables) gets the
    store's tables and keeps what it had."""
    path = monkey_home / "monkey.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    conn.execute("CREATE TABLE old_things (x TEXT)")
    conn.execute("INSERT INTO old_things VALUES ('kept')")
    conn.execute("INSERT INTO schema_migrations VALUES ('elsewhere', 1)")
    conn.commit()
    conn.close()
    assert scripted([{"text": "hi"}]).returncode == 0
    conn = sqlite3.connect(path)
    versions = dict(conn.execute("SELECT component, version FROM schema_migrations"))
    assert versions["store"] == len(STORE_MIGRATIONS) and versions["elsewhere"] == 1
    assert conn.execute("SELECT x FROM old_things").fetchall() == [("kept",)]
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (1,)


def test_sessions_needs_an_action(monkey_home: Path) -> None:
    run = invoke(["sessions"], home=monkey_home)
    assert run.returncode == 2 and "needs an action" in run.stderr
    assert time.time() > 0 and os.sep


@pytest.mark.pty
def test_session_text_is_inert_on_a_terminal_and_exact_in_a_pipe(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import pexpect

    hostile = "title \x1b]0;PWNED\x07 clipboard \x1b]52;c;aGk=\x07 csi \x9b2J bidi \u202e tag \U000e0041 end"
    script = write_script(tmp_path / "s.json", [{"text": hostile}])
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "go",
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
    )
    session_id = next(e["session_id"] for e in run.events)
    piped = invoke(["sessions", "export", session_id], home=monkey_home)
    assert any(json.loads(line).get("text") == hostile for line in piped.stdout.splitlines())
    for args in (
        ["sessions", "export", session_id],
        ["sessions", "export", session_id, "--format", "markdown"],
        ["sessions", "show", session_id],
    ):
        child = pexpect.spawn(
            sys.executable,
            ["-m", "monkey", *args],
            env=monkey_env(monkey_home),
            encoding="utf-8",
            timeout=PTY_TIMEOUT,
            dimensions=(40, 200),
        )
        child.expect(pexpect.EOF)
        shown = child.before
        child.close()
        assert child.exitstatus == 0, shown
        for raw in ("\x1b]", "\x07", "\x9b", "\u202e", "\U000e0041"):
            assert raw not in shown, (args, raw, shown)
        assert "clipboard" in shown
    # on a terminal the JSON lines are still the same JSON
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "sessions", "export", session_id],
        env=monkey_env(monkey_home),
        encoding="utf-8",
        timeout=PTY_TIMEOUT,
        dimensions=(40, 4000),
    )
    child.expect(pexpect.EOF)
    events = [json.loads(line) for line in child.before.replace("\r\n", "\n").splitlines() if line]
    assert any(e.get("text") == hostile for e in events)
