"""``loop``: per-iteration overhead of the agent loop; target <= 2 ms per iteration.

500 scripted ``file_read`` iterations through :class:`monkey.agent.loop.Agent` against
calling the same tool function directly for the same 500 reads, in the same run.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

ITERATIONS = 500


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
        )
    ]
