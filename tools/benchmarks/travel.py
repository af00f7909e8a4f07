"""``travel``: search over many stored sessions, and a session's export to Claude Code.

- ``session_search``: ``monkey sessions search`` as the command runs it (open the store, one
  FTS5 query ranked best first, the best 20 with their snippets) over 1,000 sessions of 1,000
  events each (1,000,000 events), for a word found in one session, a word found in every
  session, and three words together; target <= 200 ms each. The sessions are one session
  recorded through :class:`~monkey.store.Recorder` (which fills the search index) and copied
  999 times with plain SQL, each with a word of its own. Baseline: plain ``sqlite3`` asking
  the same FTS5 index for 20 matching rows, unranked, without snippets.
- ``claude_export``: ``monkey sessions export ID --format claude`` of a session of 10,000
  events (500 turns, each a prompt, a tool call, its result and an answer); target <= 1 s.
  Baseline: loading the same session to resume it (:meth:`SessionStore.load`).
- ``store_migration``: the first open by this monkey of a store written before search
  (store schema 2) holding 1,000 sessions of 1,000 events (1,000,000 events): the upgrade steps
  (3 fills the search index from the events, 4 the summary rows ``monkey stats`` reads, 5 a
  table), timed on a fresh copy of the file each run; the figure also gives steps 3 and 4 alone
  (``step3_s``, ``step4_s``). No target: a person waits this long once. Baseline: plain
  ``sqlite3`` reading every event's bytes once.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median
from benchmarks.sessions import _record, _session_events, _turn_events

SESSIONS = 1000
EVENTS_PER_SESSION = 1000  # 50 turns of 20 events
QUERIES = {
    "search_one_session": "zzsess517",
    "search_every_session": "parser",
    "search_three_words": "module bug fixed",
}


def _build(path: Path) -> int:
    """The 1,000 sessions; returns the events stored."""
    from monkey import events as ev

    template = "s-search-0000"
    events = _session_events(template, EVENTS_PER_SESSION // 20)
    events = [
        ev.TurnStarted(session_id=template, turn=e.turn, prompt=e.prompt + " zzsess")
        if isinstance(e, ev.TurnStarted)
        else e
        for e in events
    ]
    asyncio.run(_record(path, template, events, durable=False))
    conn = sqlite3.connect(path)
    with conn:
        for k in range(1, SESSIONS):
            sid = f"s-search-{k:04d}"
            conn.execute(
                "INSERT INTO sessions (id, workspace, title, backend, model, created, updated, status, turns, "
                "events) SELECT ?, workspace, title || ?, backend, model, created, updated, 'completed', turns, "
                "events FROM sessions WHERE id = ?",
                (sid, f" {k}", template),
            )
            conn.execute(
                "INSERT INTO events (session_id, seq, type, ts, data, hash, n) SELECT ?, seq, type, ts, data, "
                "hash, n FROM events WHERE session_id = ?",
                (sid, template),
            )
            conn.execute(
                "INSERT INTO search_docs (session_id, seq, turn, kind, text) SELECT ?, seq, turn, kind, "
                "replace(text, 'zzsess', ?) FROM search_docs WHERE session_id = ? ORDER BY id",
                (sid, f"zzsess{k}", template),
            )
    total = conn.execute("SELECT sum(n) FROM events").fetchone()[0]
    conn.close()
    return int(total)


async def _search(path: Path, text: str) -> tuple[float, int]:
    from monkey.store import SessionStore
    from monkey.store.search import search

    start = time.perf_counter()
    async with await SessionStore.open(path, readonly=True) as store:
        hits = await search(store, text, workspace="/bench", limit=20)
    return time.perf_counter() - start, len(hits)


def _plain(path: Path, text: str) -> float:
    from monkey.store.search import match_query

    start = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("SELECT rowid FROM search WHERE search MATCH ? LIMIT 20", (match_query(text),)).fetchall()
    conn.close()
    return time.perf_counter() - start


async def _export(path: Path, sid: str, config: Path) -> float:
    from monkey.session.claude_export import export_claude
    from monkey.store import SessionStore

    async with await SessionStore.open(path) as store:
        start = time.perf_counter()
        await export_claude(store, sid, env={"CLAUDE_CONFIG_DIR": str(config)})
        return time.perf_counter() - start


async def _load(path: Path, sid: str) -> float:
    from monkey.store import SessionStore

    async with await SessionStore.open(path) as store:
        start = time.perf_counter()
        await store.load(sid)
        return time.perf_counter() - start


def _old_store(path: Path) -> int:
    """A store as a monkey before search left it (store schema 2) with 1,000 sessions of 1,000
    events, written with bulk inserts in one transaction; returns the events."""
    import msgspec

    from monkey import events as ev
    from monkey.db import connect, migrate
    from monkey.store.schema import COMPONENT, MIGRATIONS

    conn = connect(path)
    migrate(conn, COMPONENT, MIGRATIONS[:2], path=path)
    conn.execute("PRAGMA synchronous = OFF")
    encode = msgspec.json.Encoder().encode
    total = 0
    conn.execute("BEGIN")
    for n in range(SESSIONS):
        sid = f"s-old-{n:04d}"
        events: list = [ev.SessionStarted(session_id=sid, workspace="/bench", backend="anthropic", model="m")]
        for turn in range(1, (EVENTS_PER_SESSION - 2) // 20 + 1):
            events += _turn_events(sid, turn)
        events += [ev.ContextUsage(session_id=sid, used=1, window=2, fraction=0.5)] * (
            EVENTS_PER_SESSION - 1 - len(events)
        )
        events.append(ev.SessionEnded(session_id=sid, reason="completed"))
        conn.execute(
            "INSERT INTO sessions (id, workspace, backend, model, created, updated, status, turns, events) "
            "VALUES (?, '/bench', 'anthropic', 'm', ?, ?, 'completed', ?, ?)",
            (sid, events[0].ts, events[-1].ts, (EVENTS_PER_SESSION - 2) // 20, len(events)),
        )
        conn.executemany(
            "INSERT INTO events (session_id, seq, type, ts, data, hash, n) VALUES (?, ?, ?, ?, ?, ?, 1)",
            [(sid, seq, e.type, e.ts, encode(e), b"") for seq, e in enumerate(events, 1)],
        )
        total += len(events)
    conn.execute("COMMIT")
    conn.close()
    return total


def _migrate(old: Path, copy: Path) -> tuple[float, float, float]:
    """Seconds the upgrade of a fresh copy of ``old`` takes: all of it, step 3, step 4."""
    import shutil

    from monkey.db import connect, migrate
    from monkey.store.schema import COMPONENT, MIGRATIONS

    copy.unlink(missing_ok=True)
    shutil.copyfile(old, copy)
    conn = connect(copy)  # its quick_check (the first open of a file in a process) is not timed
    try:
        laps = []
        for upto in (3, 4, len(MIGRATIONS)):
            start = time.perf_counter()
            migrate(conn, COMPONENT, MIGRATIONS[:upto], path=copy)
            laps.append(time.perf_counter() - start)
    finally:
        conn.close()
    return sum(laps), laps[0], laps[1]


def _read_all(path: Path) -> float:
    start = time.perf_counter()
    conn = sqlite3.connect(path)
    total = sum(len(row[0]) for row in conn.execute("SELECT data FROM events"))
    conn.close()
    assert total
    return time.perf_counter() - start


def bench_migration(runs: int = 3) -> dict:
    """The ``store_migration`` figure."""
    with tempfile.TemporaryDirectory() as tmp:
        old, copy = Path(tmp) / "old.db", Path(tmp) / "copy.db"
        made = time.perf_counter()
        total = _old_store(old)
        made = time.perf_counter() - made
        _read_all(old)  # the page cache warm for both
        laps, reads = [], []
        for _ in range(runs):
            laps.append(_migrate(old, copy))
            reads.append(_read_all(old))
        whole = median([lap[0] for lap in laps])
        return figure(
            "store_migration",
            whole,
            "s",
            "sqlite3 reading every event once",
            median(reads),
            sessions=SESSIONS,
            events=total,
            step3_s=round(median([lap[1] for lap in laps]), 2),
            step4_s=round(median([lap[2] for lap in laps]), 2),
            mb=old.stat().st_size // 2**20,
            generated_s=round(made, 1),
        )


def bench_travel(runs: int = 5) -> list[dict]:
    """Median of interleaved runs of each measurement."""
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        db = base / "search.db"
        total = _build(db)
        for name, text in QUERIES.items():
            asyncio.run(_search(db, text))  # warm the page cache and imports
            ours, plain, found = [], [], 0
            for _ in range(runs):
                elapsed, found = asyncio.run(_search(db, text))
                ours.append(elapsed)
                plain.append(_plain(db, text))
            t = median(ours)
            figures.append(
                figure(
                    name,
                    t * 1000,
                    "ms",
                    "plain sqlite3 FTS5 match, 20 rows unranked",
                    median(plain) * 1000,
                    target="<= 200 ms",
                    ok=t <= 0.2,
                    sessions=SESSIONS,
                    events=total,
                    query=text,
                    hits=found,
                )
            )

        sid = "s-export"
        asyncio.run(_record(base / "export.db", sid, _session_events(sid, 500), durable=False))
        exports, loads = [], []
        for _ in range(runs):
            exports.append(asyncio.run(_export(base / "export.db", sid, base / "claude")))
            loads.append(asyncio.run(_load(base / "export.db", sid)))
        t = median(exports)
        figures.append(
            figure(
                "claude_export",
                t * 1000,
                "ms",
                "loading the same session to resume it",
                median(loads) * 1000,
                target="<= 1000 ms",
                ok=t <= 1.0,
                events=10_000,
            )
        )
    figures.append(bench_migration())
    return figures
