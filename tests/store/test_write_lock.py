"""A store write never holds SQLite's write lock while the event loop runs: a synchronous
connection of the same process (the checkpoint journal) may wait for the lock on the loop
without waiting out the busy timeout (it did: a sub-agent's handoff read the journal on the loop
while the parent's events were being written, and the ``task`` call failed after 30 s)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from monkey.db import connect
from monkey.store import SessionStore


async def test_a_journal_waiting_on_the_loop_gets_the_lock_a_write_held(tmp_path: Path) -> None:
    path = tmp_path / "monkey.db"
    store = await SessionStore.open(path)
    mid_transaction = threading.Event()

    def inside() -> int:  # called by SQLite inside the write's transaction, on aiosqlite's thread
        mid_transaction.set()
        return 1

    await store.conn.create_function("inside", 0, inside)
    try:
        write = asyncio.create_task(
            store.write([("SELECT inside()", (), False), ("CREATE TABLE later (x)", (), False)], doing="write")
        )
        await asyncio.to_thread(mid_transaction.wait)
        journal = connect(path)  # on the loop, as the handoff's journal read was
        journal.execute("PRAGMA busy_timeout = 10000")  # the old store never let go: this failed
        try:
            journal.execute("BEGIN IMMEDIATE")  # blocks the loop until the write's transaction ends
            journal.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise AssertionError(f"the store held the write lock while the loop waited: {exc}") from None
        finally:
            journal.close()
        await write
        rows = await store.fetchall("SELECT name FROM sqlite_master WHERE name = 'later'")
        assert [tuple(r) for r in rows] == [("later",)]
    finally:
        await store.close()
