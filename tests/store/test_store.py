"""The store's recorder on real database files: batching, a full disk, a failing write in the
middle of a CLI turn, the hash chain."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from monkey import events as ev
from monkey.store import Recorder, SessionStore, StoreError
from monkey.store.chain import check_chain, link
from monkey.store.recorder import BATCH, GROUP
from tests.support.cli import invoke, stored_events, write_script


def _started(sid: str) -> ev.SessionStarted:
    return ev.SessionStarted(session_id=sid, workspace="/w", backend="scripted", model="m")


def _committed(path: Path, sid: str) -> list[str]:
    """The event types another connection sees committed (what survives ``kill -9`` now)."""
    conn = sqlite3.connect(path)
    try:
        return [kind for kind, _ in stored_events(conn, sid)]
    finally:
        conn.close()


async def test_keep_commits_all_but_deltas_before_returning(monkey_home: Path) -> None:
    """Durable before visible: when keep() returns, every event but a streaming delta is committed
    (a second connection sees it), deltas with it; deltas alone wait for a batch."""
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s1")
        first = _started("s1")
        await rec.keep(first)
        assert _committed(store.path, "s1") == ["session_started"]
        delta = ev.TextDelta(session_id="s1", text="x")
        await rec.keep(delta)
        assert rec.pending == 1, "a delta may be shown before it is stored"
        for kind in (
            ev.ToolCallEvent(session_id="s1", call_id="c", name="file_read"),
            ev.ApprovalRequested(session_id="s1", call_id="c", name="file_read"),
            ev.CheckpointCreated(session_id="s1", checkpoint_id="k", tool="file_write"),
            ev.ToolStarted(session_id="s1", call_id="c", name="file_read"),
            ev.ToolOutput(session_id="s1", call_id="c", stream="stdout", text="o"),
            ev.Usage(session_id="s1", input_tokens=1, output_tokens=1),
            ev.ContextUsage(session_id="s1", used=1, window=10, fraction=0.1),
            ev.ToolResult(session_id="s1", call_id="c", name="file_read", ok=True, output="o"),
        ):
            assert await rec.keep(kind) == [kind]
            assert _committed(store.path, "s1")[-1] == kind.type and rec.pending == 0, kind.type
        for _ in range(BATCH):
            await rec.keep(delta)
        await rec.flush()  # the full batch went out in the background; wait for it
        await rec.close()
        lines = await store.event_lines("s1")
        info = await store.get("s1")
    assert len(lines) == BATCH + 10 and info is not None and info.events == BATCH + 10 and info.pid == 0
    assert ev.decode(lines[0]) == first


async def test_keep_holds_a_burst_and_commits_it_once(monkey_home: Path) -> None:
    """Group commit: with more events ready, keep() holds them (deltas too, to keep the order)
    and hands the whole burst back only once it is committed."""
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s3")
        burst = [
            _started("s3"),
            ev.TurnStarted(session_id="s3", turn=1, prompt="p"),
            ev.TextDelta(session_id="s3", text="a"),
            ev.ToolCallEvent(session_id="s3", call_id="c", name="file_read"),
        ]
        for event in burst[:-1]:
            assert await rec.keep(event, more=True) == []
            assert _committed(store.path, "s3") == []
        assert await rec.keep(burst[-1], more=False) == burst
        assert _committed(store.path, "s3") == [e.type for e in burst]
        delta = ev.TextDelta(session_id="s3", text="b")
        assert await rec.keep(delta, more=True) == [delta], "a delta with nothing held is shown at once"
        await rec.close()


async def test_a_long_burst_is_shown_in_order_and_only_once_committed(monkey_home: Path) -> None:
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s4")
        burst = [_started("s4")] + [
            ev.ToolOutput(session_id="s4", call_id="c", stream="stdout", text=f"{i}\n")
            if i % 3
            else ev.TextDelta(session_id="s4", text=f"{i}")
            for i in range(2 * GROUP + 10)
        ]
        shown: list[ev.Event] = []
        for n, event in enumerate(burst):
            ready = await rec.keep(event, more=n < len(burst) - 1)
            shown += ready
            assert len(_committed(store.path, "s4")) >= len(shown), "shown before it was committed"
        assert shown == burst
        await rec.close()


async def test_full_disk_keeps_what_was_written(monkey_home: Path) -> None:
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s2")
        rec.add(_started("s2"))
        await rec.flush()
        pages = (await store.fetchall("PRAGMA page_count"))[0][0]
        await store.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full
        for i in range(3000):
            rec.add(ev.TextDelta(session_id="s2", text=f"piece {i} " * 5))
        with pytest.raises(StoreError, match="disk is full"):
            await rec.flush()
        assert rec.failed is not None
        rec.add(ev.TextDelta(session_id="s2", text="ignored"))
        with pytest.raises(StoreError):
            await rec.flush()
        await store.conn.execute("PRAGMA max_page_count = 1073741823")
        assert len(await store.event_lines("s2")) == 1, "what was stored before stays"


def test_a_failing_write_stops_the_turn(scripted, monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    assert scripted([{"text": "warm up"}]).returncode == 0
    conn = sqlite3.connect(monkey_home / "monkey.db")
    conn.execute(
        "CREATE TRIGGER fill BEFORE INSERT ON events WHEN NEW.seq > 6 "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.commit()
    script = write_script(
        tmp_path / "long.json",
        [
            {"text": "one two three four five six", "tool_calls": [{"name": "list_directory", "arguments": {}}]},
            {"text": "never reached"},
        ],
    )
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "fill the disk",
        ],
        home=monkey_home,
    )
    assert run.returncode == 1 and "disk is full" in run.stderr and "the turn was stopped there" in run.stderr
    assert run.stderr.count("cannot save the session") == 1, run.stderr  # said once
    assert "Traceback" not in run.stderr and "cancelled by the user" not in run.stderr + run.stdout
    sid = run.events[0]["session_id"]
    assert not run.of_type("turn_completed"), "nothing is printed that was not stored"
    stored = [data.decode() for _, data in stored_events(conn, sid)]
    printed = run.stdout.splitlines()
    assert stored and stored == printed[: len(stored)], "what was stored is kept, in order"
    assert all(json.loads(line)["type"] == "text_delta" for line in printed[len(stored) :]), (
        "after what was stored, only streamed text (shown before its batch is written) was printed"
    )


def test_chain_check_finds_gaps_and_changes() -> None:
    rows = []
    h = b""
    for seq in range(1, 8):
        data = f"row {seq}".encode()
        h = link(h, seq, "t", data)
        rows.append((seq, "t", data, h))
    assert check_chain(rows).ok and check_chain(rows).last_seq == 7
    damaged = [r for r in rows if r[0] not in (3, 4)]
    damaged[3] = (6, "t", b"changed", damaged[3][3])
    result = check_chain(damaged)
    assert result.missing == [(3, 4)] and result.altered == [6]
    assert result.describe("events") == "events: 2 missing (3-4); 1 altered (6)"
    assert check_chain([(1, "t", "text, not bytes", b"")]).altered == [1]


async def test_read_only_database_is_a_clear_error(monkey_home: Path) -> None:
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s3")
        rec.add(_started("s3"))
        await rec.flush()
        await store.conn.execute("PRAGMA query_only = ON")  # as a read-only file or mount would
        rec.add(ev.TextDelta(session_id="s3", text="lost"))
        with pytest.raises(StoreError, match="read-only"):
            await rec.flush()
        await store.conn.execute("PRAGMA query_only = OFF")
        assert len(await store.event_lines("s3")) == 1


def _answer(sid: str, words: int) -> list[ev.Event]:
    text = [f"w{i} " for i in range(words)]
    return [
        _started(sid),
        ev.TurnStarted(session_id=sid, turn=1, prompt="p"),
        *[ev.TextDelta(session_id=sid, text=t) for t in text],
        ev.MessageCompleted(session_id=sid, text="".join(text)),
        ev.TurnCompleted(session_id=sid, turn=1, reason="completed", result="".join(text), iterations=1),
    ]


async def test_a_streamed_answer_is_a_row_per_write_and_reads_back_whole(monkey_home: Path) -> None:
    """Deltas are stored as runs (one row per write, not per token) and come back one by one,
    exactly as printed; the chain over them is whole and a resumed session goes on from it."""
    events = _answer("s9", 300)
    async with await SessionStore.open() as store:
        rec = Recorder(store, "s9")
        for event in events:
            await rec.keep(event)
        await rec.flush()
        assert await store.event_lines("s9") == [ev.encode(e) for e in events]
        restored = await store.load("s9")
        assert restored.events_check.ok and restored.events_check.rows == len(events)
        rec = Recorder(store, "s9", restored=restored)
        rec.add(ev.TextDelta(session_id="s9", text="more"))
        await rec.flush()
        assert (await store.load("s9")).events_check.ok
    conn = sqlite3.connect(monkey_home / "monkey.db")
    rows = conn.execute("SELECT count(*), sum(n) FROM events WHERE session_id = 's9'").fetchone()
    assert rows[1] == len(events) + 1 and rows[0] < 10, rows


async def test_a_database_of_one_event_per_row_is_upgraded_and_reads_the_same(monkey_home: Path) -> None:
    """A file written before runs of deltas (store version 1) is upgraded in place: its rows hold
    one event each and read back, chain whole, with new runs after them."""
    from monkey.db import connect, migrate
    from monkey.store.schema import COMPONENT, MIGRATIONS

    events = _answer("old", 20)
    conn = connect(monkey_home / "monkey.db")
    migrate(conn, COMPONENT, MIGRATIONS[:1])
    rows, h = [], b""
    for seq, event in enumerate(events, start=1):
        data = ev.encode(event)
        h = link(h, seq, event.type, data)
        rows.append(("old", seq, event.type, event.ts, data, h))
    conn.execute(
        "INSERT INTO sessions (id, workspace, created, updated, events) VALUES ('old', '/w', 0, 0, ?)", (len(rows),)
    )
    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    async with await SessionStore.open() as store:
        restored = await store.load("old")
        assert restored.events_check.ok and not restored.problems
        rec = Recorder(store, "old", restored=restored)
        more = [ev.TextDelta(session_id="old", text=t) for t in ("a", "b", "c")]
        for event in more:
            rec.add(event)
        await rec.flush()
        assert await store.event_lines("old") == [ev.encode(e) for e in events + more]
        assert (await store.load("old")).events_check.ok
