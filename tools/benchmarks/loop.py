"""``loop``: per-iteration overhead of the agent loop; target <= 2 ms per iteration.

500 scripted ``file_read`` iterations through :class:`monkey.agent.loop.Agent` against
calling the same tool function directly for the same 500 reads, in the same run.

``loop_long_conversation``: stored sessions (:class:`monkey.session.session.Session`, as every
front end drives them), each turn a ``file_read`` and an answer: the median of turns 280-300 of
one session against turns 10-30 of another, taken alternately in the same run, in CPU time of
this process (its threads included): a loaded machine's waits are not the loop's cost. Target:
flat, at most 1.5x (nothing is recomputed over the whole history).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

ITERATIONS = 500
LONG_TURNS = 300
EARLY, LATE = (10, 30), (LONG_TURNS - 20, LONG_TURNS)
"""The turns compared: of a young session and of an old one, taken in turn (medians)."""


def _script(n: int):
    from monkey.backends.scripted import Script, ScriptCall, ScriptTurn

    turns = [
        ScriptTurn(text="", tool_calls=[ScriptCall(name="file_read", arguments={"path": f"f{i % 7}.txt"})])
        for i in range(n)
    ]
    turns.append(ScriptTurn(text="done"))
    return Script(turns=turns)


async def _through_loop(workspace: Path, n: int) -> float:
    from monkey.agent.loop import Agent, AgentOptions
    from monkey.backends.scripted import ScriptedBackend

    agent = Agent(
        backend=ScriptedBackend(_script(n)),
        workspace=workspace,
        options=AgentOptions(max_iterations=n + 1),
    )
    start = time.perf_counter()
    reason = None
    async for event in agent.run_task("read the files"):
        if event.type == "turn_completed":
            reason = event.reason  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - start
    if reason != "completed":
        raise RuntimeError(f"benchmark loop ended with {reason}")
    return elapsed


async def _direct(workspace: Path, n: int) -> float:
    from monkey.tools.base import ToolContext
    from monkey.tools.registry import ToolRegistry

    tool = ToolRegistry.default().get("file_read")
    ctx = ToolContext(workspace=workspace.resolve())
    start = time.perf_counter()
    for i in range(n):
        args = tool.parse({"path": f"f{i % 7}.txt"})
        await tool.run(args, ctx)
    return time.perf_counter() - start


def bench_loop(runs: int = 5) -> list[dict]:
    """Median of interleaved runs; the value is the overhead per iteration in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        for i in range(7):
            (ws / f"f{i}.txt").write_text(f"line {i}\n" * 40)
        asyncio.run(_through_loop(ws, 20))  # warm imports and caches
        loops, directs = [], []
        for _ in range(runs):
            loops.append(asyncio.run(_through_loop(ws, ITERATIONS)))
            directs.append(asyncio.run(_direct(ws, ITERATIONS)))
    loop_t, direct_t = median(loops), median(directs)
    overhead_ms = (loop_t - direct_t) / ITERATIONS * 1000
    return [
        bench_long_conversation(),
        figure(
            "loop_overhead_per_iteration",
            overhead_ms,
            "ms",
            "direct file_read call",
            direct_t / ITERATIONS * 1000,
            ratio=loop_t / direct_t,
            target="<= 2 ms per iteration",
            ok=overhead_ms <= 2.0,
            iterations=ITERATIONS,
            loop_total_s=round(loop_t, 4),
            direct_total_s=round(direct_t, 4),
        ),
    ]


async def _long_conversation(workspace: Path, script: Path) -> tuple[list[float], list[float]]:
    """CPU seconds of turns 10-30 of one stored session and of turns 280-300 of another, taken in
    turn (one of each, then the next), so a machine whose load drifts weighs on both alike."""
    from monkey.permissions.requests import HeadlessApprover
    from monkey.session.setup import SessionRequest, build_agent

    sessions = []
    for _ in range(2):
        setup = build_agent(
            SessionRequest(
                workspace=workspace, backend="scripted", script=str(script), no_approval=True, max_iterations=4
            ),
            HeadlessApprover(),
        )
        session = setup.session(show=lambda event: None, tell=lambda text, level: None)
        await session.open()
        sessions.append(session)
    early, late = sessions
    turn = [0, 0]

    async def one(which: int) -> float:
        start = time.process_time()  # this process's CPU, its threads included (the store's): not other
        await sessions[which].send(f"read file {turn[which] % 7} and say what it holds")  # programs' load
        turn[which] += 1
        return time.process_time() - start

    try:
        for _ in range(EARLY[0]):
            await one(0)
        for _ in range(LATE[0]):
            await one(1)
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(EARLY[1] - EARLY[0]):
            times[0].append(await one(0))
            times[1].append(await one(1))
    finally:
        for session in (early, late):
            await session.close()
    return times


def bench_long_conversation() -> dict:
    """Per-turn cost late in a long session against early in it, in the same run."""
    saved = os.environ.get("MONKEY_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws, home = root / "ws", root / "home"
        ws.mkdir()
        home.mkdir()
        for i in range(7):
            (ws / f"f{i}.txt").write_text(f"line {i} of a file the model reads again and again\n" * 150)
        script = root / "script.json"
        steps = []
        for i in range(LONG_TURNS):
            steps.append({"tool_calls": [{"name": "file_read", "arguments": {"path": f"f{i % 7}.txt"}}]})
            steps.append({"text": f"f{i % 7}.txt holds 150 lines."})
        script.write_text(json.dumps({"turns": steps}))
        os.environ["MONKEY_HOME"] = str(home)
        try:
            early_s, late_s = asyncio.run(_long_conversation(ws, script))
        finally:
            if saved is None:
                os.environ.pop("MONKEY_HOME", None)
            else:
                os.environ["MONKEY_HOME"] = saved
    early = median(early_s) * 1000
    late = median(late_s) * 1000
    return figure(
        "loop_long_conversation_turn",
        late,
        "ms (CPU)",
        f"turns {EARLY[0]}-{EARLY[1]} of the same session",
        early,
        ratio=late / early,
        target=f"<= 1.5x (turns {LATE[0]}-{LATE[1]} against {EARLY[0]}-{EARLY[1]})",
        ok=late / early <= 1.5,
        turns=LONG_TURNS,
    )
