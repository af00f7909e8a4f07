"""``sessions``: resume time and event append throughput of the session store.

- ``session_resume``: open the store, load and check a session of 10,000 events and
  2,000 conversation nodes, and build the encoded request ready to send; target <= 200 ms.
  Baseline: plain ``sqlite3`` reading the same rows.
- ``event_append``: events per second through :class:`monkey.store.Recorder` (encode, hash,
  follow the conversation, aiosqlite transactions of 512 events written while the next
  batch is built); target >= 20,000/s and >= 0.5x plain ``sqlite3`` inserting the same
  events, a row each (the plain way to keep a stream), and the conversation nodes in the
  same batches.
- ``event_append_packed`` (no target): the same, against plain ``sqlite3`` inserting the
  rows the store wrote (runs of deltas packed in one row, see :mod:`monkey.store.schema`).
- ``event_append_durable`` (no target): the same stream stored as every driver stores it
  (:meth:`~monkey.store.Recorder.keep`: each event but the text deltas committed before it is shown).
- ``durable_flush``: the time one such flush takes; target <= 5 ms.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

TURNS = 500  # x 4 nodes = 2,000 nodes, x 20 events = 10,000 events
APPEND_EVENTS = 20_000


def _turn_events(sid: str, turn: int) -> list:
    from monkey import events as ev

    call = ev.ToolCallSpec(id=f"c{turn}", name="file_read", arguments={"path": f"src/module_{turn}.py"})
    text = f"Let me look at module {turn} to see what it does with the parser."
    out = [
        ev.TurnStarted(session_id=sid, turn=turn, prompt=f"Explain module {turn} and fix its bug, please."),
        ev.IterationStarted(session_id=sid, turn=turn, iteration=1, max_iterations=20),
        ev.ContextUsage(session_id=sid, used=1200 + turn * 90, window=200_000, fraction=0.01),
    ]
    out += [ev.TextDelta(session_id=sid, text=w + " ") for w in text.split()[:4]]
    out += [
        ev.MessageCompleted(session_id=sid, text=text, tool_calls=[call], stop_reason="tool_use"),
        ev.ToolCallEvent(session_id=sid, call_id=call.id, name=call.name, arguments=call.arguments),
        ev.ToolStarted(session_id=sid, call_id=call.id, name=call.name),
        ev.ToolResult(
            session_id=sid,
            call_id=call.id,
            name=call.name,
            ok=True,
            output="".join(f"{i:4}\tdef f{i}(x): return x + {i}\n" for i in range(12)),
        ),
        ev.IterationStarted(session_id=sid, turn=turn, iteration=2, max_iterations=20),
    ]
    answer = f"Module {turn} adds numbers; the bug was an off-by-one in f3, fixed now."
    out += [ev.TextDelta(session_id=sid, text=w + " ") for w in answer.split()[:5]]
    out += [
        ev.MessageCompleted(session_id=sid, text=answer),
        ev.Usage(session_id=sid, input_tokens=1200, output_tokens=40, model="m"),
        ev.TurnCompleted(session_id=sid, turn=turn, reason="completed", result=answer, iterations=2),
    ]
    assert len(out) == 20, len(out)
    return out


async def _record(path: Path, sid: str, events: list, *, durable: bool = True) -> float:
    """Seconds to append ``events``; ``durable``: as every driver stores them (each event but the
    deltas committed before it is shown), else only in full batches."""
    from monkey.store import Recorder, SessionStore
    from monkey.store.recorder import BATCH

    async with await SessionStore.open(path) as store:
        rec = Recorder(store, sid)
        start = time.perf_counter()
        for event in events:
            if durable:
                await rec.keep(event)
                continue
            rec.add(event)
            if rec.pending >= BATCH:
                await rec.flush(wait=False)
        await rec.close()
        return time.perf_counter() - start


async def _durable_flushes(path: Path, count: int) -> float:
    """Median seconds of one flush that makes a single tool result durable."""
    from monkey import events as ev
    from monkey.store import Recorder, SessionStore

    async with await SessionStore.open(path) as store:
        rec = Recorder(store, "s-durable")
        rec.add(ev.SessionStarted(session_id="s-durable", workspace="/bench", backend="scripted", model="m"))
        await rec.flush()
        times = []
        for i in range(count):
            rec.add(ev.ToolResult(session_id="s-durable", call_id=f"c{i}", name="file_read", ok=True, output="x" * 200))
            start = time.perf_counter()
            await rec.flush()
            times.append(time.perf_counter() - start)
        await rec.close()
    return median(times)


_PLAIN_SCHEMA = [
    "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, ts REAL NOT NULL, "
    "data BLOB NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
    "CREATE TABLE nodes (session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, in_context INTEGER NOT "
    "NULL, tokens INTEGER NOT NULL, event_seq INTEGER NOT NULL, data BLOB NOT NULL, hash BLOB NOT NULL, "
    "PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
]


def _stored_rows(path: Path, *, per_event: bool) -> tuple[list[tuple], list[tuple]]:
    """The event and node rows the store wrote, to insert again with plain sqlite3; ``per_event``:
    one row for each event (a run of deltas split, as a plain store of the stream would hold it)."""
    conn = sqlite3.connect(path)
    events = []
    for sid, seq, kind, ts, data, h, n in conn.execute(
        "SELECT session_id, seq, type, ts, data, hash, n FROM events ORDER BY seq"
    ):
        if n == 1 or not per_event:
            events.append((sid, seq, kind, ts, data, h))
        else:
            events += [(sid, seq - n + 1 + k, kind, ts, part, h) for k, part in enumerate(data.split(b"\n"))]
    nodes = conn.execute(
        "SELECT session_id, seq, kind, in_context, tokens, event_seq, data, hash FROM nodes ORDER BY seq"
    ).fetchall()
    conn.close()
    return events, nodes


def _plain_inserts(path: Path, events: list[tuple], nodes: list[tuple], batch: int) -> float:
    """Seconds for plain sqlite3 to insert the same rows, ``batch`` events (and their nodes) per transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for statement in _PLAIN_SCHEMA:
        conn.execute(statement)
    start = time.perf_counter()
    n = 0
    for i in range(0, len(events), batch):
        chunk = events[i : i + batch]
        last = chunk[-1][1]
        j = n
        while j < len(nodes) and nodes[j][5] <= last:
            j += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", chunk)
        conn.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?)", nodes[n:j])
        conn.execute("COMMIT")
        n = j
    conn.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?)", nodes[n:])
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def _session_events(sid: str, turns: int) -> list:
    from monkey import events as ev

    out: list = [ev.SessionStarted(session_id=sid, workspace="/bench", backend="scripted", model="m")]
    for turn in range(1, turns + 1):
        out += _turn_events(sid, turn)
    return out[: turns * 20]  # exactly 20 per turn, the session start included


async def _resume(path: Path, sid: str) -> tuple[float, int, int]:
    import msgspec

    from monkey.prompts import render_system_prompt
    from monkey.messages import ModelRequest
    from monkey.store import SessionStore
    from monkey.tools.registry import ToolRegistry

    specs = ToolRegistry.default().specs()
    start = time.perf_counter()
    async with await SessionStore.open(path) as store:
        restored = await store.load(sid)
    request = ModelRequest(
        system=render_system_prompt(None, model="m", workspace="/bench"),
        messages=restored.messages,
        tools=specs,
        session_id=sid,
    )
    msgspec.json.encode(request)
    elapsed = time.perf_counter() - start
    if restored.damaged:
        raise RuntimeError(f"benchmark session damaged: {restored.problems}")
    return elapsed, restored.events_check.rows, len(restored.nodes)


def _plain_read(path: Path, sid: str) -> float:
    start = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute(
        "SELECT seq, kind, in_context, tokens, data, hash FROM nodes WHERE session_id = ? ORDER BY seq", (sid,)
    ).fetchall()
    conn.execute("SELECT seq, type, data, hash FROM events WHERE session_id = ? ORDER BY seq", (sid,)).fetchall()
    conn.close()
    return time.perf_counter() - start


def bench_sessions(runs: int = 5) -> list[dict]:
    """Median of interleaved runs of each measurement."""
    from monkey.store.recorder import BATCH

    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sid = "s-resume"
        events = _session_events(sid, TURNS)
        asyncio.run(_record(base / "resume.db", sid, events))
        asyncio.run(_resume(base / "resume.db", sid))  # warm imports
        resumes, reads = [], []
        counts = (0, 0)
        for _ in range(runs):
            elapsed, n_events, n_nodes = asyncio.run(_resume(base / "resume.db", sid))
            resumes.append(elapsed)
            counts = (n_events, n_nodes)
            reads.append(_plain_read(base / "resume.db", sid))
        resume_t, read_t = median(resumes), median(reads)
        figures.append(
            figure(
                "session_resume",
                resume_t * 1000,
                "ms",
                "plain sqlite3 read of the same rows",
                read_t * 1000,
                target="<= 200 ms",
                ok=resume_t <= 0.2,
                events=counts[0],
                nodes=counts[1],
            )
        )

        append = [e for i in range(APPEND_EVENTS // 20 + 1) for e in _turn_events("s-append", i + 1)]
        append = _session_events("s-append", 1)[:1] + append[: APPEND_EVENTS - 1]
        asyncio.run(_record(base / "rows.db", "s-append", append, durable=False))
        event_rows, node_rows = _stored_rows(base / "rows.db", per_event=True)
        packed_rows, _ = _stored_rows(base / "rows.db", per_event=False)
        ours, plain, packed, driven = [], [], [], []
        for i in range(runs):
            ours.append(asyncio.run(_record(base / f"append{i}.db", "s-append", append, durable=False)))
            plain.append(_plain_inserts(base / f"plain{i}.db", event_rows, node_rows, BATCH))
            packed.append(_plain_inserts(base / f"packed{i}.db", packed_rows, node_rows, BATCH))
            driven.append(asyncio.run(_record(base / f"driven{i}.db", "s-append", append)))
        ours_t, plain_t, packed_t, driven_t = median(ours), median(plain), median(packed), median(driven)
        rate, plain_rate = len(append) / ours_t, len(append) / plain_t
        figures.append(
            figure(
                "event_append",
                rate,
                "events/s",
                "plain sqlite3 executemany of the same events (a row each) and nodes",
                plain_rate,
                target=">= 20000 events/s and >= 0.5x plain sqlite3",
                ok=rate >= 20_000 and rate >= 0.5 * plain_rate,
                events=len(append),
                nodes=len(node_rows),
                batch=BATCH,
            )
        )
        figures.append(
            figure(
                "event_append_packed",
                rate,
                "events/s",
                "plain sqlite3 executemany of the rows the store wrote (runs of deltas packed)",
                len(append) / packed_t,
                events=len(append),
                rows=len(packed_rows),
                note="the stricter baseline: plain sqlite3 given the store's own packing (no target)",
            )
        )
        durable_rate = len(append) / driven_t
        figures.append(
            figure(
                "event_append_durable",
                durable_rate,
                "events/s",
                "plain sqlite3 executemany of the same rows (events and nodes)",
                plain_rate,
                events=len(append),
                note="back-to-back stream with a durable write after every message, tool result and iteration "
                "start (about 1 in 4 events); in a real session model calls separate them",
            )
        )
        flush_t = asyncio.run(_durable_flushes(base / "durable.db", 200))
        figures.append(
            figure(
                "durable_flush",
                flush_t * 1000,
                "ms",
                "plain sqlite3 batch of 512 rows",
                plain_t / (len(append) / BATCH) * 1000,
                target="<= 5 ms",
                ok=flush_t <= 0.005,
                note="one tool result made durable before the next model call",
            )
        )
    return figures
