"""Cancelling a session's turn and switching its mode from ``monkey web`` while the session runs in another
process (a ``--task``, ``--plain`` on a pty): the request is stored, the session's process does it through
its own paths, the transcript says it came from the browser, and a request outlives a killed server but
never reaches the next process to open the session."""

from __future__ import annotations

import pytest

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx

from monkey.db import db_path
from monkey.store.control import request
from monkey.store.store import SessionStore
from tests.support.checkpoints import write_script
from tests.support.cli import monkey_env
from tests.support.pty import spawn_repl
from tests.support.web import base, served

pytestmark = pytest.mark.pty

SLOW = [{"text": " ".join(["word"] * 400), "delay": 0.5}, {"text": "never"}]
"""A model that takes minutes to answer: the turn runs until it is cancelled."""
QUICK = [{"text": "done"}] * 4


def _stored(home: Path, sid: str, kind: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db_path(home))
    try:
        rows = conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type = ? ORDER BY seq", (sid, kind)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(r[0]) for r in rows]


async def _one(client: httpx.AsyncClient, state: str) -> str:
    """The id of the one session, once it is in ``state`` (it starts in another process)."""
    for _ in range(3000):
        listed = (await client.get("/api/sessions")).json()["sessions"]
        if listed and listed[0]["state"] == state:
            return str(listed[0]["id"])
        await asyncio.sleep(0.02)
    raise AssertionError(f"no session became {state}: {listed}")


async def _outcome(client: httpx.AsyncClient, sid: str, rid: str) -> dict[str, Any]:
    """What came of request ``rid``, once the session's process took it."""
    for _ in range(3000):
        said = (await client.get(f"/api/sessions/{sid}/requests/{rid}")).json()
        if said["state"] != "stored":
            return dict(said)
        await asyncio.sleep(0.02)
    raise AssertionError(f"request {rid} never taken: {said}")


def _task(workspace: Path, home: Path, script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--task",
            "write a long answer",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(home),
    )


async def test_cancel_from_the_browser_stops_a_task_running_in_another_process(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    proc = _task(workspace, monkey_home, write_script(tmp_path / "s.json", SLOW))
    try:
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            sid = await _one(client, "running")
            url = f"/api/sessions/{sid}/cancel"
            assert (await client.post(url)).status_code == 403, "no Origin: refused (CSRF)"
            assert (await client.post("/api/sessions/nope/cancel", headers={"origin": base(front)})).status_code == 404
            asked = await client.post(url, headers={"origin": base(front)})
            assert asked.status_code == 202, asked.text
            assert asked.json()["state"] == "stored" and asked.json()["session"] == sid
            said = await _outcome(client, sid, asked.json()["id"])
            assert said["state"] == "done" and said["message"] == "cancelled from the browser", said
            assert said["action"] == "cancel" and said["by"] == "web"
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, err
            again = await client.post(url, headers={"origin": base(front)})
            assert again.status_code == 409, "no process runs it now"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [end] = _stored(monkey_home, sid, "turn_completed")
    assert end["reason"] == "cancelled" and end["message"] == "cancelled from the browser"


async def test_the_mode_from_the_browser_goes_through_mode_and_its_checks(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", QUICK))
    try:
        child.expect_exact("Type a task")
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            child.sendline("hello")
            child.expect_exact("done")
            sid = await _one(client, "idle")
            url, origin = f"/api/sessions/{sid}/mode", {"origin": base(front)}
            assert (await client.post(url, json={"mode": "plan"})).status_code == 403
            assert (await client.post(url, json={"mode": "yolo"}, headers=origin)).status_code == 400
            assert (await client.post(url, content=b"[", headers=origin)).status_code == 400
            asked = await client.post(url, json={"mode": "read-only"}, headers=origin)  # plan, by another name
            assert asked.status_code == 202 and asked.json()["mode"] == "plan"
            said = await _outcome(client, sid, asked.json()["id"])
            assert said == {**said, "state": "done", "message": "mode set to plan from the browser"}
            child.expect_exact("mode: plan (set from the browser)")
            wider = await client.post(url, json={"mode": "auto"}, headers=origin)
            refused = await _outcome(client, sid, wider.json()["id"])
            assert refused["state"] == "refused" and "only at the session's own terminal" in refused["message"]
            child.expect_exact("auto mode asked from the browser")
            cancel = await client.post(f"/api/sessions/{sid}/cancel", headers=origin)
            idle = await _outcome(client, sid, cancel.json()["id"])
            assert idle == {**idle, "state": "refused", "message": "no turn is running"}
            child.sendline("/mode")
            child.expect_exact("* plan")
    finally:
        if child.isalive():
            child.sendline("/exit")  # a Ctrl-D typed before the prompt reads is lost; a line is not
            child.expect_exact(pexpect_eof())
    changes = _stored(monkey_home, sid, "mode_changed")
    assert [(c["mode"], c["previous"], c["by"]) for c in changes] == [("plan", "default", "web")]


def pexpect_eof() -> Any:
    import pexpect

    return pexpect.EOF


async def test_a_request_outlives_a_killed_server_and_never_reaches_the_next_process(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    proc = _task(workspace, monkey_home, write_script(tmp_path / "s.json", SLOW))
    web = subprocess.Popen(
        [sys.executable, "-m", "monkey", "web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(monkey_home),
    )
    try:
        assert web.stdout is not None
        url = web.stdout.readline().split(" ", 1)[1].strip()
        root = url.split("/?", 1)[0]
        async with httpx.AsyncClient(base_url=root) as client:
            await client.get(url)
            sid = await _one(client, "running")
            asked = await client.post(f"/api/sessions/{sid}/cancel", headers={"origin": root})
            assert asked.status_code == 202
        web.send_signal(signal.SIGKILL)  # the server is gone; the request is in the store
        web.wait()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
    finally:
        for p in (proc, web):
            if p.poll() is None:
                p.kill()
                p.wait()
    [end] = _stored(monkey_home, sid, "turn_completed")
    assert end["message"] == "cancelled from the browser"

    # a request stored for the process that ran the session, never taken (it was killed): the next one
    # to open the session does not do it, but does what is asked of it
    async with await SessionStore.open(db_path(monkey_home)) as store:
        stale = await request(store, sid, {"action": "mode", "mode": "plan"}, "web")
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "q.json", QUICK), "--resume", sid)
    try:
        child.expect_exact("Type a task")
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            assert (await client.get(f"/api/sessions/{sid}/requests/nope")).status_code == 404
            child.sendline("hello")
            child.expect_exact("done")
            assert await _one(client, "idle") == sid
            later = await client.post(
                f"/api/sessions/{sid}/mode", json={"mode": "accept-edits"}, headers={"origin": base(front)}
            )
            assert later.status_code == 202, later.text
            assert (await _outcome(client, sid, later.json()["id"]))["state"] == "done"
            old = (await client.get(f"/api/sessions/{sid}/requests/{stale}")).json()
            assert old["state"] == "dropped", "stored for the process before: never taken by this one"
            child.expect_exact("mode: accept-edits (set from the browser)")
        child.sendline("/exit")  # a Ctrl-D typed before the prompt reads is lost; a line is not
        child.expect_exact(pexpect_eof())
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert [c["mode"] for c in _stored(monkey_home, sid, "mode_changed")] == ["accept-edits"], "plan never came"


async def test_a_cancel_on_a_sub_agents_page_cancels_its_root_sessions_turn(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "task",
                        "arguments": {"description": "slow", "prompt": "take your time", "agent": "general"},
                    }
                ]
            },
            {"text": "never"},
        ],
        agents={"general": {"turns": [{"text": " ".join(["word"] * 400), "delay": 0.5}]}},
    )
    proc = _task(workspace, monkey_home, script)
    try:
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            for _ in range(3000):
                listed = (await client.get("/api/sessions")).json()["sessions"]
                child = [s for s in listed if s["parent"] and s["state"] == "running"]
                if child:
                    break
                await asyncio.sleep(0.02)
            assert child, f"no sub-agent ran: {listed}"
            root = child[0]["parent"]
            asked = await client.post(f"/api/sessions/{child[0]['id']}/cancel", headers={"origin": base(front)})
            assert asked.status_code == 202 and asked.json()["session"] == root, "the root's process runs it"
            said = await _outcome(client, child[0]["id"], asked.json()["id"])
            assert said["state"] == "done" and said["session"] == root
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [end] = _stored(monkey_home, root, "turn_completed")
    assert end["message"] == "cancelled from the browser"
