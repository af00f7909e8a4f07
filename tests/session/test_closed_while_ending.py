"""A session whose end is cancelled part way (the app torn down while it stored the end) still closes
its store: left open, its connection's thread (aiosqlite's is not a daemon) kept monkey running after
the terminal was restored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from monkey.backends.scripted import ScriptTurn
from monkey.session.session import Session
from tests.support.procs import store_threads
from tests.support.agent import agent_for


@pytest.mark.parametrize("steps", range(1, 8))
async def test_a_session_whose_end_is_cancelled_leaves_no_store_open(
    workspace: Path, tmp_path: Path, steps: int
) -> None:
    before = store_threads()
    agent = agent_for(workspace, [ScriptTurn(text="x")])
    session = Session(agent, switcher=None, show=lambda e: None, tell=lambda t, lvl: None, store_path=tmp_path / "m.db")  # type: ignore[arg-type]
    await session.open()
    async for _ in session.turn("hello"):  # a turn: the end has something to store
        pass
    closing = asyncio.create_task(session.close())
    for _ in range(steps):  # cancelled after this many turns of the loop (the first runs it): in the end, or after
        await asyncio.sleep(0)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    for thread in store_threads() - before:
        await asyncio.to_thread(thread.join, 30)  # each ends once it has closed its connection
    assert not store_threads() - before, "the session's store is still open"
