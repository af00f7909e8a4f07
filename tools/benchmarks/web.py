"""``web``: ``monkey web`` beside running sessions.

- ``web_sse_latency_p95``: a session stores 500 events a second (``tool_output`` events through the
  :class:`~monkey.store.Recorder`, each committed before the next, as every driver stores them, in this
  process); ``monkey web`` in another process streams them to an SSE client. The figure is the p95 of
  the seconds from each event's ``ts`` (taken just before it is stored) to its arrival at the client;
  target <= 250 ms. Baseline: the same for a plain poll of the store by sequence number every 50 ms
  (the stream's own interval) in that process: the least any reader of another process's writes waits.
- ``web_loop_with_20_clients``: a stored session (:class:`~monkey.session.session.Session`, as every front
  end drives it) runs turns of ``file_read`` calls on the scripted backend, in rounds taken in turn with 20
  SSE clients of ``monkey web`` (in another process) following it live and with none; the figure is the
  wall time per loop iteration with the clients, median of the rounds; target <= 1.1x the time without.
- ``web_session_page_ready``: the session page of a 10,000-event session (a realistic mix: turns of model
  calls, tool calls, results, deltas, usage) in Chromium, from the navigation to every event shown
  (the transcript and the event list built); target <= 1.5 s. Baseline: the same page of a 200-event
  session. Needs Chromium (``/usr/bin/chromium``, or ``MONKEY_TEST_CHROMIUM``) and Playwright; without
  them the figure says it was skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import figure, median

ROOT = Path(__file__).resolve().parents[2]
RATE = 500
"""Events a second the streaming session stores."""
LATENCY_EVENTS = 2500
"""Events measured for the latency (5 s at the rate)."""
CLIENTS = 20
ROUNDS = 5
ITERATIONS = 40
"""``file_read`` calls in one turn of the loop figure."""
TURNS = 2
PAGE_EVENTS = 10_000
SMALL_EVENTS = 200


class _Helper:
    """``benchmarks.web_follow`` in another process: the server and its clients."""

    def __init__(self, home: Path, sid: str) -> None:
        env = {**os.environ, "MONKEY_HOME": str(home), "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tools'}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.web_follow", sid],
            cwd=ROOT / "tools",
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def ask(self, line: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"benchmarks.web_follow ended (exit {self.proc.wait()})")
        return json.loads(answer)

    def close(self) -> None:
        try:
            self.ask("quit")
        except (RuntimeError, BrokenPipeError, ValueError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def _latency(home: Path) -> tuple[list[float], list[float], float]:
    from monkey import events as ev
    from monkey.store import Recorder, SessionStore
    from monkey.store.lock import SessionLock

    sid = "bench-stream"
    async with await SessionStore.open() as store:
        lock = SessionLock.acquire(store.locks, sid)  # owned: the monitor follows it as a running session
        assert lock is not None
        rec = Recorder(store, sid)
        await rec.keep(ev.SessionStarted(session_id=sid, workspace=str(home), backend="scripted", model="m"))
        await rec.keep(ev.TurnStarted(session_id=sid, turn=1, prompt="stream"))
        helper = _Helper(home, sid)
        stop = asyncio.Event()
        stored = 0

        async def write() -> None:
            nonlocal stored
            start = time.perf_counter()
            while not stop.is_set():
                stored += 1
                await rec.keep(ev.ToolOutput(ts=time.time(), session_id=sid, call_id="c1", text=f"line {stored}\n"))
                ahead = start + stored / RATE - time.perf_counter()
                if ahead > 0:
                    await asyncio.sleep(ahead)

        writer = asyncio.create_task(write())
        began = time.perf_counter()
        try:
            got = await asyncio.to_thread(helper.ask, f"latency {LATENCY_EVENTS}")
        finally:
            stop.set()
            await writer
            helper.close()
            await rec.close()
            lock.release()
        rate = stored / (time.perf_counter() - began)
    return got["sse"], got["poll"], rate


def _steps(turns: int, iterations: int) -> list[dict]:
    steps: list[dict] = []
    for _ in range(turns):
        steps += [
            {"tool_calls": [{"name": "file_read", "arguments": {"path": f"f{i % 7}.txt", "offset": i + 1}}]}
            for i in range(iterations)
        ]
        steps.append({"text": "read them all"})
    return steps


async def _loop(home: Path, ws: Path) -> tuple[list[float], list[float], list[int]]:
    from monkey.permissions.requests import HeadlessApprover
    from monkey.session.setup import SessionRequest, build_agent

    for i in range(7):
        (ws / f"f{i}.txt").write_text(f"line {i}\n" * 200)
    script = home / "loop.json"
    script.write_text(json.dumps({"turns": _steps(TURNS * (2 * ROUNDS + 2), ITERATIONS)}))
    setup = build_agent(
        SessionRequest(
            workspace=ws, backend="scripted", script=str(script), no_approval=True, max_iterations=ITERATIONS + 2
        ),
        HeadlessApprover(),
    )
    session = setup.session(show=lambda event: None, tell=lambda text, level: None)
    await session.open()
    helper: _Helper | None = None

    async def round_of() -> float:
        start = time.perf_counter()
        for _ in range(TURNS):
            await session.send("read the files")
        return time.perf_counter() - start

    try:
        await round_of()  # warm, and the session stored: the clients follow it from here
        helper = _Helper(home, session.agent.session_id)
        withs, withouts, received = [], [], []
        for n in range(ROUNDS):
            for clients in (True, False) if n % 2 else (False, True):
                if clients:
                    await asyncio.to_thread(helper.ask, f"connect {CLIENTS}")
                    withs.append(await round_of())
                    received += (await asyncio.to_thread(helper.ask, "disconnect"))["received"]
                else:
                    withouts.append(await round_of())
        return withs, withouts, received
    finally:
        if helper is not None:
            helper.close()
        await session.close()


async def _store_session(sid: str, events: int) -> int:
    """A session of about ``events`` events (whole turns), stored through the recorder; how many."""
    from benchmarks.stats import START, TURN_EVENTS, _turn

    from monkey import events as ev
    from monkey.store import Recorder, SessionStore

    async with await SessionStore.open() as store:
        rec = Recorder(store, sid)
        out: list[ev.Event] = [
            ev.SessionStarted(session_id=sid, workspace="/work/proj", backend="anthropic", model="model-a")
        ]
        for turn in range((events - 2) // TURN_EVENTS):
            out += _turn(sid, turn + 1, START + turn * 10)
        out.append(ev.SessionEnded(session_id=sid, reason="completed"))
        for event in out:
            await rec.keep(event, more=True)
        await rec.flush()
        await rec.close()
        return rec.events


async def _page(home: Path) -> dict[str, Any]:
    chromium = os.environ.get("MONKEY_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        return {"skipped": "playwright is not installed"}
    if not Path(chromium).exists():
        return {"skipped": "no Chromium (apt-get install chromium)"}
    from monkey.web.server import WebFront, WebSettings

    big = await _store_session("bench-page-big", PAGE_EVENTS + 2)
    small = await _store_session("bench-page-small", SMALL_EVENTS)
    lines: list[str] = []
    front = WebFront(WebSettings(), say=lines.append)
    serving = asyncio.create_task(front.serve())
    while not lines:
        await asyncio.sleep(0.01)
    base = front.url.split("/?", 1)[0]
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium)
            page = await browser.new_page()
            await page.goto(front.url)

            async def ready(sid: str, count: int) -> float:
                await page.goto("about:blank")
                start = time.perf_counter()
                await page.goto(f"{base}/session?id={sid}")
                await page.locator(f"body[data-last='{count}']").wait_for(state="attached", timeout=60_000)
                return time.perf_counter() - start

            await ready("bench-page-small", small)  # the browser's caches warm
            bigs, smalls = [], []
            for _ in range(3):
                bigs.append(await ready("bench-page-big", big))
                smalls.append(await ready("bench-page-small", small))
            await browser.close()
    finally:
        front.stop()
        await serving
    return {"big": median(bigs), "small": median(smalls), "events": big, "small_events": small}


def bench_web() -> list[dict]:
    saved = os.environ.get("MONKEY_HOME")
    out = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            ws = Path(tmp) / "ws"
            home.mkdir()
            ws.mkdir()
            os.environ["MONKEY_HOME"] = str(home)
            sse, poll, rate = asyncio.run(_latency(home))
            ours, floor = _p95(sse) * 1000, _p95(poll) * 1000
            out.append(
                figure(
                    "web_sse_latency_p95",
                    ours,
                    "ms",
                    "a plain poll of the store every 50 ms (p95)",
                    floor,
                    target="<= 250 ms",
                    ok=ours <= 250,
                    events=len(sse),
                    events_per_s=round(rate),
                    p50_ms=round(median(sse) * 1000, 1),
                )
            )
            withs, withouts, received = asyncio.run(_loop(home, ws))
            per = TURNS * ITERATIONS
            value, base = median(withs) / per * 1000, median(withouts) / per * 1000
            out.append(
                figure(
                    "web_loop_with_20_clients",
                    value,
                    "ms per iteration",
                    "the same loop with no client",
                    base,
                    target="<= 1.1x",
                    ok=value / base <= 1.1,
                    clients=CLIENTS,
                    rounds=ROUNDS,
                    iterations=per,
                    events_each_client_got=min(received) if received else 0,
                )
            )
            page = asyncio.run(_page(home))
            if "skipped" in page:
                out.append({"name": "web_session_page_ready", "skipped": page["skipped"]})
            else:
                out.append(
                    figure(
                        "web_session_page_ready",
                        page["big"],
                        "s",
                        f"the same page of a {page['small_events']}-event session",
                        page["small"],
                        target="<= 1.5 s",
                        ok=page["big"] <= 1.5,
                        events=page["events"],
                    )
                )
    finally:
        if saved is None:
            os.environ.pop("MONKEY_HOME", None)
        else:
            os.environ["MONKEY_HOME"] = saved
    return out
