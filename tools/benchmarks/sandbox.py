"""``sandbox``: what the sandbox adds to a command: ``shell_execute`` of ``true`` with and without
it (the same tool, the same supervision), interleaved; target: at most 30 ms added (median).

One figure per sandbox that works here (bubblewrap, Landlock); a kind that cannot run here is
reported with ``ok: false`` and why, so a machine without a sandbox is seen, not skipped.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure, median

TARGET_MS = 30.0


async def _timed(tool, args, ctx) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    await tool.run(args, ctx)
    return time.perf_counter() - start


def bench_sandbox(runs: int = 41) -> list[dict]:
    """Median wall time of ``shell_execute true`` in each working sandbox against no sandbox."""
    from monkey.tools.base import ShellSettings, ToolContext
    from monkey.tools.sandbox import bubblewrap_problem, landlock_problem, probe
    from monkey.tools.shell import ShellArgs, ShellExecute

    workspace = Path(tempfile.mkdtemp(prefix="monkey-bench-sandbox-"))
    (workspace / ".git").mkdir()
    (workspace / "src").mkdir()
    tool, args = ShellExecute(), ShellArgs(command="true")
    figures: list[dict] = []
    try:
        for kind, problem in (("bubblewrap", bubblewrap_problem()), ("landlock", landlock_problem())):
            if problem:
                figures.append(
                    {
                        "name": f"sandbox_{kind}_true",
                        "value": None,
                        "unit": "ms",
                        "baseline_name": "shell_execute true, no sandbox",
                        "baseline_value": None,
                        "ratio": None,
                        "target": f"added <= {TARGET_MS:g} ms",
                        "ok": False,
                        "met": False,
                        "problem": problem,
                    }
                )
                continue
            sandbox = probe(kind).sandbox
            bare = ToolContext(workspace=workspace, shell=ShellSettings())
            boxed = ToolContext(workspace=workspace, shell=ShellSettings(sandbox=sandbox))

            async def measure(boxed: ToolContext, bare: ToolContext) -> tuple[list[float], list[float]]:
                with_box, without = [], []
                for _ in range(3):  # warm up both paths
                    await _timed(tool, args, boxed)
                    await _timed(tool, args, bare)
                for _ in range(runs):
                    with_box.append(await _timed(tool, args, boxed))
                    without.append(await _timed(tool, args, bare))
                return with_box, without

            with_box, without = asyncio.run(measure(boxed, bare))
            value, baseline = median(with_box) * 1000, median(without) * 1000
            added = value - baseline
            figures.append(
                figure(
                    f"sandbox_{kind}_true",
                    value,
                    "ms",
                    "shell_execute true, no sandbox",
                    baseline,
                    target=f"added <= {TARGET_MS:g} ms",
                    ok=added <= TARGET_MS,
                    added_ms=round(added, 3),
                    met=added <= TARGET_MS,
                    runs=runs,
                )
            )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    return figures
