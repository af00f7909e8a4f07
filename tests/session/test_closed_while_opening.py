"""A session closed while it is still opening (the app quit just after its first frame) closes the store the
opening ends with: left open, its connection's thread (aiosqlite's is not a daemon) kept the process alive
after the app had gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monkey.backends.scripted import ScriptTurn
from monkey.session.session import Session
from tests.support.procs import store_threads
from tests.support.agent import agent_for


async def test_a_session_closed_while_it_opens_leaves_no_store_open(workspace: Path, tmp_path: Path) -> None:
    before = store_threads()
    agent = agent_for(workspace, [ScriptTurn(text="x")])
    session = Session(agent, switcher=None, show=lambda e: None, tell=lambda t, lvl: None, store_path=tmp_path / "m.db")  # type: ignore[arg-type]
    opening = asyncio.create_task(session.open())
    await asyncio.sleep(0)  # the opening waits for the database
    await session.close()  # the person quit meanwhile
    handle = await opening
    assert session.handle is None, "the session is closed: it holds no stored session"
    for thread in store_threads() - before:
        await asyncio.to_thread(thread.join, 30)  # each ends once it has closed its connection
    assert not store_threads() - before, "the store the opening ended with is still open"
    assert handle.store is not None
