"""Answering a session's approval from ``monkey web`` while it waits in another process (``--plain``
on a pty): the answer is stored, the session's process picks it up, the terminal says who answered,
a denial's reason reaches the model, and the first answer wins."""

from __future__ import annotations

import pytest

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx2 as httpx

from monkey.db import db_path
from tests.support.checkpoints import write_script
from tests.support.web import base, served, waiting, WRITE

pytestmark = pytest.mark.pty


async def _pending(client: httpx.AsyncClient) -> tuple[str, str]:
    listed = (await client.get("/api/sessions")).json()["sessions"]
    assert [s["state"] for s in listed] == ["waiting"]
    return listed[0]["id"], listed[0]["pending"][0]["call_id"]


def _results(home: Path, sid: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db_path(home))
    try:
        rows = conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type IN ('tool_result', "
            "'approval_resolved') ORDER BY seq",
            (sid,),
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(r[0]) for r in rows]


async def test_an_approval_answered_in_the_browser_lets_the_terminal_session_go_on(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    with waiting(workspace, monkey_home, write_script(tmp_path / "s.json", WRITE)) as child:
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            sid, call = await _pending(client)
            url = f"/api/sessions/{sid}/approvals/{call}"
            origin = {"origin": base(front)}
            assert (await client.post(url, json={"choice": "once"})).status_code == 403, "no Origin: refused"
            assert (await client.post(url, json={"choice": "maybe"}, headers=origin)).status_code == 400
            answer = await client.post(url, json={"choice": "once"}, headers=origin)
            assert answer.status_code == 200 and answer.json()["by"] == "web"
            child.expect_exact("file_write: approved once in the browser")
            child.expect_exact("the turn is over")
            again = await client.post(url, json={"choice": "deny", "reason": "late"}, headers=origin)
            assert again.status_code == 409, "answered already"
        assert (workspace / "a.txt").read_text() == "hi\n"
        resolved, result = _results(monkey_home, sid)
        assert resolved["decision"] == "approved" and resolved["by"] == "user"
        assert result["ok"] is True


async def test_a_denial_with_a_reason_from_the_browser_reaches_the_model(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    with waiting(workspace, monkey_home, write_script(tmp_path / "s.json", WRITE)) as child:
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            sid, call = await _pending(client)
            answer = await client.post(
                f"/api/sessions/{sid}/approvals/{call}",
                headers={"origin": base(front)},
                json={"choice": "deny", "reason": "write b.txt instead"},
            )
            assert answer.status_code == 200
            child.expect_exact("file_write: denied in the browser: write b.txt instead")
            child.expect_exact("the turn is over")
    assert not (workspace / "a.txt").exists()
    resolved, result = _results(monkey_home, sid)
    assert resolved["decision"] == "denied"
    assert result["ok"] is False and "write b.txt instead" in result["output"], "the model is told why"


async def test_the_first_answer_wins_an_answer_at_the_terminal_closes_the_question(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    with waiting(workspace, monkey_home, write_script(tmp_path / "s.json", WRITE)) as child:
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            sid, call = await _pending(client)
            child.sendline("y")
            child.expect_exact("the turn is over")
            late = await client.post(
                f"/api/sessions/{sid}/approvals/{call}",
                headers={"origin": base(front)},
                json={"choice": "deny", "reason": "too late"},
            )
            assert late.status_code == 409
    conn = sqlite3.connect(db_path(monkey_home))
    try:
        assert conn.execute("SELECT by FROM control WHERE call_id = ?", (call,)).fetchall() == [("here",)]
    finally:
        conn.close()
    assert (workspace / "a.txt").read_text() == "hi\n"
