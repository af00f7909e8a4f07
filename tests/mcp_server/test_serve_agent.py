"""The ``agent`` and ``agent_reply`` tools of ``monkey serve``: a whole monkey task on the configured
backend (here the scripted one), as its own stored session, headless, undoable."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.cli import invoke, invoke_async, stored_events, write_script
from tests.support.mcp_serve import INIT, read_answer, send_line, serve_process, stdio_session, text

TURNS = [
    {
        "text": "Writing it.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "agent.txt", "content": "by the agent\n"}}],
    },
    {"text": "Done: agent.txt is written."},
    {"text": "You said: again. Nothing more to do."},
]


async def test_agent_runs_a_task_and_agent_reply_continues_it(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "script.json", TURNS)
    async with stdio_session(
        workspace, monkey_home, "--backend", "scripted", "--script", str(script), "--mode", "accept-edits"
    ) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names[-2:] == ["agent", "agent_reply"]
        first = await client.call_tool("agent", {"prompt": "make agent.txt"})
        assert not first.is_error, text(first)
        done = first.structured_content
        assert done["result"] == "Done: agent.txt is written." and done["reason"] == "completed"
        assert f"[monkey session {done['session_id']}: completed]" in text(first)
        assert (workspace / "agent.txt").read_text() == "by the agent\n"
        again = await client.call_tool("agent_reply", {"session_id": done["session_id"], "prompt": "again"})
        assert again.structured_content["result"] == "You said: again. Nothing more to do."
        assert again.structured_content["session_id"] == done["session_id"]
        missing = await client.call_tool("agent_reply", {"session_id": "s-no-such", "prompt": "hi"})
        assert missing.is_error and "cannot continue session s-no-such" in text(missing)
        bad = await client.call_tool("agent", {"task": "no prompt"})
        assert bad.is_error and "needs prompt" in text(bad)
    (session,) = json.loads(
        (await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)).stdout
    )
    assert session["id"] == done["session_id"] and session["turns"] == 2 and session["state"] == "completed"
    undo = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "agent.txt").exists()


async def test_an_agent_task_runs_headless_what_would_ask_is_refused(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "script.json", TURNS[:2])
    async with stdio_session(workspace, monkey_home, "--backend", "scripted", "--script", str(script)) as client:
        result = await client.call_tool("agent", {"prompt": "make agent.txt"})
        assert result.structured_content["reason"] == "denied", result.structured_content
        assert "needs approval and there is no terminal to ask on" in result.structured_content["message"]
        assert not (workspace / "agent.txt").exists()
        # the client's own call (its approval stands for the person's) runs in the same mode
        direct = await client.call_tool("file_write", {"path": "agent.txt", "content": "by the client\n"})
        assert not direct.is_error, text(direct)
    assert (workspace / "agent.txt").read_text() == "by the client\n"


@pytest.mark.subprocess
def test_sigterm_during_an_agent_task_ends_its_turn_and_session(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "a very slow answer indeed", "delay": 600}])
    proc = serve_process(workspace, monkey_home, "--backend", "scripted", "--script", str(script))
    try:
        send_line(proc, INIT)
        read_answer(proc)
        send_line(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send_line(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "agent", "arguments": {"prompt": "take your time"}},
            },
        )
        db = monkey_home / "monkey.db"
        deadline = time.monotonic() + 60
        started = False
        while not started and time.monotonic() < deadline:  # the task's turn is stored as started
            if db.exists():
                with sqlite3.connect(db) as conn:
                    try:
                        started = bool(conn.execute("SELECT 1 FROM events WHERE type = 'turn_started'").fetchall())
                    except sqlite3.OperationalError:  # the schema is being made
                        started = False
            if not started:
                time.sleep(0.1)
        assert started
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (session,) = json.loads(invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    with sqlite3.connect(monkey_home / "monkey.db") as conn:
        kinds = [kind for kind, _ in stored_events(conn, session["id"])]
    assert kinds[-2:] == ["turn_completed", "session_ended"], kinds
    assert session["state"] == "completed"
