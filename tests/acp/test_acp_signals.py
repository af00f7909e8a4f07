"""``monkey acp`` ended by a signal (an editor quitting, a closed terminal) ends its sessions as the
app does: the turn stopped, ``session_ended`` stored, the exit status 128 + N."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from tests.support.acp import prompt, start_monkey
from tests.support.cli import invoke_async, write_script

pytestmark = pytest.mark.subprocess  # signals to a real monkey acp process


async def _stored(workspace: Path, home: Path) -> tuple[dict, list[dict]]:
    """What the ended process stored, read in this process (the ACP process has exited)."""
    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=home)
    (session,) = json.loads(listed.stdout)
    exported = (await invoke_async(["sessions", "export", session["id"]], home=home)).stdout
    return session, [json.loads(line) for line in exported.splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_between_turns_stores_the_sessions_end(
    sig: int, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "answered"}])
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script)) as (conn, _, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("a question"))
        process.send_signal(sig)
        assert await asyncio.wait_for(process.wait(), 60) == 128 + sig
    stored, events = await _stored(workspace, monkey_home)
    assert stored["state"] == "completed", stored
    assert events[-1]["type"] == "session_ended"


async def test_sigterm_during_a_turn_stops_it_and_stores_the_end(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    waits = f"{sys.executable} -c \"import time; print('started', flush=True); time.sleep(120)\""
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "shell_execute", "arguments": {"command": waits}}]}, {"text": "never"}],
    )
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(script), "--no-approval") as (
        conn,
        client,
        process,
    ):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt("run it")))
        await client.wait_for(lambda u: u.session_update == "tool_call", 60)  # the turn runs its command
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 60) == 128 + signal.SIGTERM
        turn.cancel()
        await asyncio.gather(turn, return_exceptions=True)
    stored, events = await _stored(workspace, monkey_home)
    assert stored["state"] == "completed", stored
    types = [e["type"] for e in events]
    assert types[-1] == "session_ended" and "turn_completed" in types
    assert [e["reason"] for e in events if e["type"] == "turn_completed"] == ["cancelled"]
