"""``durable``: what durable-before-visible costs the stream-json output.

Every event but the text deltas is committed to the session store before stream-json
prints it (:meth:`monkey.store.Recorder.keep`). This drives a realistic stream (turns of
streamed text, tool calls, checkpoints, output, results; about one event in ten must be
committed) the way ``monkey agent --task`` does: events arrive on a queue, as the agent
loop emits them, and each event handed back by ``keep`` goes to a
:class:`~monkey.line.output.StreamJsonSink` writing to a pipe that a reader drains.

- ``durable_stream``: events per second through the store and the sink together, when the
  events come faster than they can be stored (a burst: ``keep`` commits what is ready in
  one transaction, syncing to the disk only when a durable event is in it); baseline: the
  sink alone on the same queue. Target >= 0.5x.
- ``durable_stream_paced`` (no target): every event kept on its own (nothing else ready, as
  when a model streams slower than the disk): one commit per event that needs one.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import figure, median

TURNS = 60
RUNS = 5


def _events(sid: str) -> list:
    from monkey import events as ev

    out: list = [ev.SessionStarted(session_id=sid, workspace="/bench", backend="scripted", model="m")]
    words = (
        "The parser drops the last token when the line ends without a newline, so I will "
        "read it, fix the loop and run the tests again to be sure nothing else breaks. "
    ).split() * 3
    for turn in range(1, TURNS + 1):
        call = ev.ToolCallSpec(id=f"c{turn}", name="shell_execute", arguments={"command": "pytest -q"})
        out += [
            ev.TurnStarted(session_id=sid, turn=turn, prompt=f"fix bug {turn}"),
            ev.IterationStarted(session_id=sid, turn=turn, iteration=1, max_iterations=20),
            ev.ContextUsage(session_id=sid, used=1000 + turn, window=200_000, fraction=0.01),
        ]
        out += [ev.TextDelta(session_id=sid, text=w + " ") for w in words]
        out += [
            ev.MessageCompleted(session_id=sid, text=" ".join(words), tool_calls=[call], stop_reason="tool_use"),
            ev.Usage(session_id=sid, input_tokens=1000, output_tokens=80, model="m"),
            ev.ToolCallEvent(session_id=sid, call_id=call.id, name=call.name, arguments=call.arguments),
            ev.ApprovalResolved(session_id=sid, call_id=call.id, name=call.name, decision="approved", by="rule"),
            ev.CheckpointCreated(session_id=sid, checkpoint_id=f"k{turn}", tool=call.name, call_id=call.id),
            ev.ToolStarted(session_id=sid, call_id=call.id, name=call.name),
        ]
        out += [
            ev.ToolOutput(session_id=sid, call_id=call.id, stream="stdout", text=f"test_{i} PASSED\n") for i in range(4)
        ]
        out += [
            ev.ToolResult(session_id=sid, call_id=call.id, name=call.name, ok=True, output="4 passed\n"),
            ev.IterationStarted(session_id=sid, turn=turn, iteration=2, max_iterations=20),
        ]
        out += [ev.TextDelta(session_id=sid, text=w + " ") for w in words[:40]]
        out += [
            ev.MessageCompleted(session_id=sid, text=" ".join(words[:40])),
            ev.TurnCompleted(session_id=sid, turn=turn, reason="completed", result="fixed", iterations=2),
        ]
    return out


class _Pipe:
    """A pipe whose read end a thread drains, like a program reading stream-json."""

    def __enter__(self):  # type: ignore[no-untyped-def]
        r, w = os.pipe()
        self._r = r
        self.out = os.fdopen(w, "wb")
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()
        return self.out

    def _drain(self) -> None:
        while os.read(self._r, 1 << 16):
            pass

    def __exit__(self, *exc: object) -> None:
        self.out.close()
        self._thread.join()
        os.close(self._r)


async def _drive(events: list, path: Path | None, *, burst: bool) -> float:
    """Seconds to take ``events`` off a queue and show them (storing them first when ``path``)."""
    from monkey.line.output import StreamJsonSink
    from monkey.store import Recorder, SessionStore

    queue: asyncio.Queue = asyncio.Queue()
    store = await SessionStore.open(path) if path is not None else None
    rec = Recorder(store, events[0].session_id) if store is not None else None
    try:
        with _Pipe() as out:
            sink = StreamJsonSink(out)

            async def produce() -> None:
                for event in events:
                    queue.put_nowait(event)
                    if not burst:
                        await asyncio.sleep(0)  # one at a time: the consumer takes each before the next
                queue.put_nowait(None)

            start = time.perf_counter()
            producer = asyncio.create_task(produce())
            while (event := await queue.get()) is not None:
                if rec is None:
                    sink(event)
                    continue
                for shown in await rec.keep(event, more=burst and queue.qsize() > 1):
                    sink(shown)
            await producer
            if rec is not None:
                await rec.flush()
            return time.perf_counter() - start
    finally:
        if store is not None:
            await store.close()


def bench_durable() -> list[dict]:
    events = _events("s-bench")
    must = sum(e.type not in ("text_delta", "thinking_delta") for e in events)
    figs = []
    with tempfile.TemporaryDirectory(prefix="monkey-bench-durable-") as tmp:
        for burst in (True, False):
            stored, alone = [], []
            for run in range(RUNS):
                alone.append(asyncio.run(_drive(events, None, burst=burst)))
                stored.append(asyncio.run(_drive(events, Path(tmp) / f"{burst}-{run}.db", burst=burst)))
            rate, base = len(events) / median(stored), len(events) / median(alone)
            if burst:
                figs.append(
                    figure(
                        "durable_stream",
                        rate,
                        "events/s",
                        "stream-json sink alone, same queue",
                        base,
                        target=">= 0.5x the sink alone",
                        ok=rate >= 0.5 * base,
                        events=len(events),
                        committed=must,
                        runs=RUNS,
                        note="store + stream-json sink, every event but deltas committed before it is "
                        "printed; a burst is committed in one transaction (fsync only with a durable "
                        "event in it)",
                    )
                )
            else:
                figs.append(
                    figure(
                        "durable_stream_paced",
                        rate,
                        "events/s",
                        "stream-json sink alone, same queue",
                        base,
                        events=len(events),
                        committed=must,
                        runs=RUNS,
                        note="events arriving one at a time: one commit per event that needs one (no target)",
                    )
                )
    return figs
