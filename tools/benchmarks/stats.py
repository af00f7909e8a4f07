"""``stats``: ``monkey stats`` over a large store, and what the summary rows cost when events are stored.

A store of 1,000 sessions and 1,000,000 events (10 workspaces of 100 sessions, over 30 days,
two models, four tools, failures, refusals and approvals) is generated with bulk inserts: the
events as the recorder encodes them and the summary rows a :class:`~monkey.store.tally.Tally`
makes of them (what the recorder writes with them).

- ``stats_all``: open the store and compute every workspace's figures by day (what
  ``monkey stats --all --json`` does, without starting Python); target <= 1 s. Baseline:
  plain ``sqlite3`` reading every event's bytes once (the least a scan of the events costs).
- ``stats_workspace``: the same for one workspace of 100 sessions; target <= 0.2 s. Baseline:
  the same scan of that workspace's events.
- ``stats_append``: events per second through the recorder with the summary rows, against
  without them (``Recorder(summaries=False)``), interleaved; target >= 0.9x.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

SESSIONS = 1000
WORKSPACES = 10
EVENTS_PER_SESSION = 1000
TURN_EVENTS = 20
START = 1_790_000_000.0


def _turn(sid: str, turn: int, ts: float) -> list:
    from monkey import events as ev

    tool = ("file_read", "shell_execute", "file_edit", "grep")[turn % 4]
    model = ("model-a", "model-b")[turn % 2]
    call = ev.ToolCallSpec(id=f"c{turn}", name=tool, arguments={"path": f"src/m{turn}.py"})
    t = [ts + i * 0.5 for i in range(TURN_EVENTS)]
    asked = tool == "shell_execute"
    out = [ev.TurnStarted(ts=t[0], session_id=sid, turn=turn, prompt=f"fix module {turn}"),
           ev.IterationStarted(ts=t[1], session_id=sid, turn=turn, iteration=1, max_iterations=20),
           ev.TextDelta(ts=t[2], session_id=sid, text="Let me "),
           ev.TextDelta(ts=t[3], session_id=sid, text="look."),
           ev.MessageCompleted(ts=t[4], session_id=sid, text="Let me look.", tool_calls=[call], stop_reason="tool_use"),
           ev.Usage(ts=t[5], session_id=sid, input_tokens=1200 + turn, output_tokens=40, cache_read_tokens=900,
                    cost_usd=0.0042, model=model, ttft_ms=300 + turn % 50, duration_ms=1500 + turn % 400),
           ev.ToolCallEvent(ts=t[6], session_id=sid, call_id=call.id, name=tool, arguments=call.arguments)]
    if asked:
        out += [ev.ApprovalRequested(ts=t[7], session_id=sid, call_id=call.id, name=tool),
                ev.ApprovalResolved(ts=t[8], session_id=sid, call_id=call.id, name=tool, decision="approved",
                                    by="user", wait_ms=2000 + turn)]
    else:
        out += [ev.ContextUsage(ts=t[7], session_id=sid, used=1200, window=200_000, fraction=0.01),
                ev.ContextUsage(ts=t[8], session_id=sid, used=1300, window=200_000, fraction=0.01)]
    out += [ev.ToolStarted(ts=t[9], session_id=sid, call_id=call.id, name=tool),
            ev.ToolResult(ts=t[10], session_id=sid, call_id=call.id, name=tool, ok=turn % 7 != 0,
                          output="x" * 200, duration_ms=20 + turn % 90, lines_added=turn % 3, files_changed=1),
            ev.IterationStarted(ts=t[11], session_id=sid, turn=turn, iteration=2, max_iterations=20)]
    out += [ev.TextDelta(ts=t[12 + i], session_id=sid, text=f"w{i} ") for i in range(4)]
    out += [ev.MessageCompleted(ts=t[16], session_id=sid, text="Fixed."),
            ev.Usage(ts=t[17], session_id=sid, input_tokens=1300, output_tokens=60, cost_usd=0.0051, model=model,
                     ttft_ms=250, duration_ms=1800),
            ev.ContextUsage(ts=t[18], session_id=sid, used=1400, window=200_000, fraction=0.01),
            ev.TurnCompleted(ts=t[19], session_id=sid, turn=turn, reason="completed", result="Fixed.", iterations=2)]
    assert len(out) == TURN_EVENTS
    return out


def generate(path: Path) -> None:
    """The large store, written with bulk inserts (one transaction)."""
    import msgspec

    from monkey import events as ev
    from monkey.db import connect, migrate
    from monkey.store.schema import COMPONENT, MIGRATIONS
    from monkey.store.tally import SAMPLE, TALLIED, UPSERT, Tally

    conn = connect(path)
    migrate(conn, COMPONENT, MIGRATIONS, path=path)
    conn.execute("PRAGMA synchronous = OFF")
    encode = msgspec.json.Encoder().encode
    conn.execute("BEGIN")
    for n in range(SESSIONS):
        sid = f"s{n:05d}"
        base = START + n * (30 * 86400 / SESSIONS)
        started = ev.SessionStarted(ts=base, session_id=sid, workspace=f"/work/ws{n % WORKSPACES}",
                                    backend="anthropic", model="model-a")
        events = [started]
        for turn in range((EVENTS_PER_SESSION - 2) // TURN_EVENTS):
            events += _turn(sid, turn + 1, base + 1 + turn * 10)
        events.append(ev.SessionEnded(ts=events[-1].ts + 1, session_id=sid, reason="completed"))
        events += [ev.ContextUsage(ts=events[-1].ts, session_id=sid, used=1, window=2, fraction=0.5)] * (
            EVENTS_PER_SESSION - len(events))
        tally = Tally()
        rows = []
        for seq, event in enumerate(events, 1):
            if event.type in TALLIED:
                tally.add(event)
            rows.append((sid, seq, event.type, event.ts, encode(event), b"", 1))
        conn.execute("INSERT INTO sessions (id, workspace, backend, model, created, updated, status, events) "
                     "VALUES (?, ?, 'anthropic', 'model-a', ?, ?, 'completed', ?)",
                     (sid, started.workspace, base, events[-1].ts, len(events)))
        conn.executemany("INSERT INTO events (session_id, seq, type, ts, data, hash, n) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         rows)
        for sql, params, _ in tally.statements(sid):
            assert sql in (UPSERT, SAMPLE)
            conn.executemany(sql, params)
    conn.execute("COMMIT")
    conn.close()


async def _stats(path: Path, workspace: str | None) -> float:
    from monkey.metrics.query import Scope, compute
    from monkey.store import SessionStore

    start = time.perf_counter()
    async with await SessionStore.open(path, readonly=True) as store:
        scope = Scope(workspace=workspace)
        report = await compute(store, scope, "day")
        report.to_dict(scope)
    return time.perf_counter() - start


def _scan(path: Path, workspace: str | None) -> float:
    start = time.perf_counter()
    conn = sqlite3.connect(path)
    if workspace is None:
        rows = conn.execute("SELECT data FROM events")
    else:
        rows = conn.execute("SELECT data FROM events WHERE session_id IN (SELECT id FROM sessions WHERE workspace = ?)",
                            (workspace,))
    total = sum(len(r[0]) for r in rows)
    conn.close()
    assert total
    return time.perf_counter() - start


async def _append(path: Path, sid: str, events: list, summaries: bool) -> float:
    from monkey.store import Recorder, SessionStore

    async with await SessionStore.open(path) as store:
        rec = Recorder(store, sid, summaries=summaries)
        start = time.perf_counter()
        for event in events:
            await rec.keep(event, more=True)
        await rec.close()
        return time.perf_counter() - start


def bench_stats() -> list[dict]:
    from monkey import events as ev

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "monkey.db"
        made = time.perf_counter()
        generate(path)
        made = time.perf_counter() - made
        for name, workspace, target, limit in (("stats_all", None, "<= 1 s", 1.0),
                                               ("stats_workspace", "/work/ws3", "<= 0.2 s", 0.2)):
            asyncio.run(_stats(path, workspace))  # the page cache warm for both, as for a person's second run
            _scan(path, workspace)
            ours = median([asyncio.run(_stats(path, workspace)) for _ in range(3)])
            scan = median([_scan(path, workspace) for _ in range(3)])
            out.append(figure(name, ours, "s", "sqlite3 reading the events once", scan, target=target,
                              ok=ours <= limit, sessions=SESSIONS if workspace is None else SESSIONS // WORKSPACES,
                              events=SESSIONS * EVENTS_PER_SESSION if workspace is None else
                              SESSIONS * EVENTS_PER_SESSION // WORKSPACES, generated_s=round(made, 1)))
        events = [ev.SessionStarted(session_id="a", workspace="/w", backend="b", model="m")]
        for turn in range(250):
            events += _turn("a", turn + 1, START + turn)
        with_rows, without = [], []
        for run in range(5):
            for summaries, into in ((True, with_rows), (False, without)):
                db = Path(tmp) / f"append-{run}-{summaries}.db"
                into.append(len(events) / asyncio.run(_append(db, "a", events, summaries)))
        value, base = median(with_rows), median(without)
        out.append(figure("stats_append", value, "events/s", "the recorder without summary rows", base,
                          target=">= 0.9x", ok=value / base >= 0.9))
    return out
