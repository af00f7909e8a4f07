"""``telemetry``: the loop's cost per iteration with the OpenTelemetry export on against off, in the same run.

Two stored sessions (:class:`monkey.session.session.Session`, as every front end drives them) run turns of
``file_read`` calls on the scripted backend, one with ``MONKEY_ENABLE_TELEMETRY=1`` exporting to a real
OTLP/HTTP receiver on 127.0.0.1 in another process (tests/support/fakes/otlp_receiver.py), one without. They take
rounds in turn; a round of the first ends with its export flushed (log events and metrics sent and answered),
so what the export costs is counted in the round that caused it. The figure is this process's CPU time (its
threads included: the SDK's export threads are counted, a loaded machine's other programs are not) per
iteration, median of the rounds, on against off. Target: at most 1.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import figure, median

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 50
"""``file_read`` calls in one turn."""
TURNS = 2
"""Turns in a round."""
ROUNDS = 7
"""Rounds measured each way, taken alternately."""


def _steps(turns: int, iterations: int) -> list[dict]:
    steps: list[dict] = []
    for _ in range(turns):
        steps += [
            {"tool_calls": [{"name": "file_read", "arguments": {"path": f"f{i % 7}.txt", "offset": i + 1}}]}
            for i in range(iterations)
        ]
        steps.append({"text": "read them all"})
    return steps


async def _session(workspace: Path, script: Path, on: bool, iterations: int) -> Any:
    from monkey.permissions.requests import HeadlessApprover
    from monkey.session.setup import SessionRequest, build_agent

    if on:
        os.environ["MONKEY_ENABLE_TELEMETRY"] = "1"
    else:
        os.environ.pop("MONKEY_ENABLE_TELEMETRY", None)
    setup = build_agent(
        SessionRequest(
            workspace=workspace, backend="scripted", script=str(script), no_approval=True, max_iterations=iterations + 2
        ),
        HeadlessApprover(),
    )
    session = setup.session(show=lambda event: None, tell=lambda text, level: None)
    if (session.telemetry is not None) != on or (on and session.telemetry.observer.exporting is None):
        raise RuntimeError("the telemetry is not what the benchmark asked for (is the otel extra installed?)")
    await session.open()
    return session


async def _rounds(workspace: Path, script: Path, rounds: int, iterations: int) -> tuple[list[float], list[float]]:
    off = await _session(workspace, script, on=False, iterations=iterations)
    on = await _session(workspace, script, on=True, iterations=iterations)
    exporting = on.telemetry.observer.exporting

    async def round_of(session: Any) -> float:
        start = time.process_time()
        for _ in range(TURNS):
            await session.send("read the files")
        if session is on:  # what this round queued is sent now, on this round's clock
            await asyncio.to_thread(exporting.logs.force_flush)
            await asyncio.to_thread(exporting.meters.force_flush)
        return time.process_time() - start

    try:
        await round_of(on)  # warm caches, the SDK's and the HTTP connection's included
        await round_of(off)
        ons, offs = [], []
        for _ in range(rounds):
            ons.append(await round_of(on))
            offs.append(await round_of(off))
        return ons, offs
    finally:
        await off.close()
        await on.close()


def bench_telemetry(argv: list[str] | None = None) -> list[dict]:
    """CPU per iteration, telemetry on (exporting to a receiver) against off."""
    parser = argparse.ArgumentParser(prog="bench.py telemetry")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds each way (default {ROUNDS})")
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help=f"calls in a turn (default {ITERATIONS})")
    args = parser.parse_args(argv or [])
    if args.rounds < 1 or args.iterations < 1:
        parser.error("--rounds and --iterations must be >= 1")
    saved = {k: os.environ.get(k) for k in ("MONKEY_HOME", "MONKEY_ENABLE_TELEMETRY", "OTEL_EXPORTER_OTLP_ENDPOINT")}
    receiver = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fakes.otlp_receiver"],
        cwd=ROOT,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    try:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            ws, home = root / "ws", root / "home"
            ws.mkdir()
            home.mkdir()
            os.environ["MONKEY_HOME"] = str(home)
            for i in range(7):
                (ws / f"f{i}.txt").write_text(f"line {i}\n" * 200)
            script = root / "script.json"
            script.write_text(json.dumps({"turns": _steps(TURNS * (args.rounds + 1), args.iterations)}))
            ons, offs = asyncio.run(_rounds(ws, script, args.rounds, args.iterations))
    finally:
        receiver.stdin.close()
        got = json.loads(receiver.stdout.readlines()[-1])
        receiver.wait(timeout=30)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    per = TURNS * args.iterations
    on, off = median(ons) / per * 1000, median(offs) / per * 1000
    return [
        figure(
            "telemetry_loop_per_iteration",
            on,
            "ms (CPU)",
            "the same loop with telemetry off",
            off,
            ratio=on / off,
            target="<= 1.1x",
            ok=on / off <= 1.1,
            iterations=per,
            rounds=args.rounds,
            received_points=got["points"],
            received_logs=got["logs"],
        )
    ]
