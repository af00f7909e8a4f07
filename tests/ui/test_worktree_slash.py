"""``/worktree NAME`` in the app: this session ends (stored), a new one opens in a new git worktree."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.app import notices, settle, type_and_send, until

SIZE = (120, 36)
WRITE = [
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
    {"text": "wrote a.txt"},
]


async def test_worktree_moves_the_app_into_a_new_worktree(
    app_for,
    workspace: Path,  # type: ignore[no-untyped-def]
    monkey_home: Path,
) -> None:
    from monkey.ui.widgets.app_header import AppHeader

    app = app_for(WRITE, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session is not None, "the session is open")
        await type_and_send(pilot, app, "write it")
        await settle(pilot, app)
        first = app.agent.session_id
        assert (workspace / "a.txt").exists()
        await type_and_send(pilot, app, "/worktree feat")
        wt = (workspace / ".monkey" / "worktrees" / "feat").resolve()
        await until(pilot, lambda: app.session is not None and app.agent.workspace == wt, "the new session is open")
        assert app.agent.session_id != first
        header = app.query_one(AppHeader)
        assert header.workspace == wt and header.branch == "monkey/feat"
        assert any("a new session in worktree feat" in n for n in notices(app))
        assert not (wt / "a.txt").exists(), "the worktree starts from HEAD, without the main checkout's new file"
        await type_and_send(pilot, app, "write it there")
        await settle(pilot, app)
        assert (wt / "a.txt").read_text() == "a\n"
        second = app.agent.session_id
        await type_and_send(pilot, app, "/worktree ../up")
        await settle(pilot, app)
        assert any("has '/'" in n for n in notices(app)) and app.agent.session_id == second
    conn = sqlite3.connect(monkey_home / "monkey.db")
    rows = dict(conn.execute("SELECT id, workspace FROM sessions").fetchall())
    conn.close()
    assert rows == {first: str(workspace.resolve()), second: str(wt)}, "each session stored where it worked"
