"""``subagents``: what delegating costs, and whether parallel children overlap.

- ``task_round_trip``: the extra time one ``task`` call adds to a parent's iteration (a scripted
  child that answers at once: its agent, session, model call, events stored in its own session
  row), against one scripted model call of the parent in the same run (an iteration with a
  trivial tool call); target <= 3x. Both runs go through the session store, as ``--task`` does.
- ``parallel_children_wall``: four ``task`` calls in one response, each child running a 1 s
  shell command, against one such child alone; target <= 1.5 s wall.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import figure, median

ROUND_TRIPS = 60


def _script(turns: list[dict[str, Any]], agents: dict[str, Any]):  # type: ignore[no-untyped-def]
    import msgspec

    from monkey.backends.scripted import Script

    return msgspec.convert({"turns": turns, "agents": agents}, Script)


def _task(prompt: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": "a part", "prompt": prompt, "agent": "general"}}


async def _run(workspace: Path, db: Path, turns: list[dict[str, Any]], agents: dict[str, Any]) -> float:
    """Seconds for one task run through the loop and the store (each event kept before the next)."""
    from monkey.agent.agent_defs import discover_agents
    from monkey.permissions.policy import ApprovalPolicy
    from monkey.agent.loop import Agent, AgentOptions
    from monkey.agent.subagents import Delegation, install_task_tool
    from monkey.backends.scripted import ScriptedBackend
    from monkey.session.stored import open_session

    agent = Agent(
        backend=ScriptedBackend(_script(turns, agents)),
        workspace=workspace,
        policy=ApprovalPolicy(mode="auto"),
        options=AgentOptions(max_iterations=len(turns) + 1, max_repeats=10**6),
    )
    install_task_tool(agent, Delegation(discover_agents(workspace, home=workspace, trusted=False)))
    session = await open_session(agent, path=db)
    reason = None
    start = time.perf_counter()
    try:
        async for event in agent.run_task("go"):
            await session.recorder.keep(event, more=agent.backlog > 0)
            if event.type == "turn_completed" and event.session_id == agent.session_id:
                reason = event.reason  # type: ignore[attr-defined]
    finally:
        elapsed = time.perf_counter() - start
        await session.close()
    if reason != "completed":
        raise RuntimeError(f"benchmark run ended with {reason}")
    return elapsed


def _round_trips(workspace: Path, db: Path, n: int) -> tuple[float, float]:
    """(seconds per task round trip beyond a plain iteration, seconds per plain iteration)."""
    ls = {"name": "list_directory", "arguments": {"path": "."}}
    plain = [{"tool_calls": [ls]} for _ in range(n)] + [{"text": "done"}]
    tasks = [{"tool_calls": [_task(f"part {i}")]} for i in range(n)] + [{"text": "done"}]
    child = {"general": {"turns": [{"text": "done at once", "repeat": n}]}}
    t_plain = asyncio.run(_run(workspace, db, plain, {}))
    t_task = asyncio.run(_run(workspace, db, tasks, child))
    return (t_task - t_plain) / n, t_plain / n


def bench_subagents(runs: int = 5) -> list[dict]:
    """Median of interleaved runs."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("a\n")
        db = Path(tmp) / "monkey.db"
        _round_trips(ws, db, 5)  # warm imports and caches
        extra, plain = [], []
        for _ in range(runs):
            e, p = _round_trips(ws, db, ROUND_TRIPS)
            extra.append(e)
            plain.append(p)
        sleep = {"name": "shell_execute", "arguments": {"command": "sleep 1"}}
        child = {"turns": [{"tool_calls": [sleep]}, {"text": "slept"}]}
        four = {f"general#{i}": child for i in range(1, 5)}
        walls, ones = [], []
        for _ in range(max(1, runs // 2)):
            walls.append(
                asyncio.run(
                    _run(ws, db, [{"tool_calls": [_task(str(i)) for i in range(4)]}, {"text": "all done"}], four)
                )
            )
            ones.append(
                asyncio.run(_run(ws, db, [{"tool_calls": [_task("one")]}, {"text": "done"}], {"general#1": child}))
            )
    trip, call = median(extra), median(plain)
    wall, one = median(walls), median(ones)
    return [
        figure(
            "task_round_trip",
            trip * 1000,
            "ms",
            "scripted_model_call",
            call * 1000,
            target="<= 3x",
            ok=trip <= 3 * call,
        ),
        figure("parallel_children_wall", wall, "s", "one_child_wall", one, target="<= 1.5 s", ok=wall <= 1.5),
    ]
