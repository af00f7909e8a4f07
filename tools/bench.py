#!/usr/bin/env python3
"""monkey's benchmarks: each prints JSON objects, one per line, with a same-run baseline.

    python tools/bench.py startup loop local [--json]
    python tools/bench.py permissions [--sample 100]   # decisions per shell line vs spawning `true`
    python tools/bench.py plugins   # a plugin's text events/s vs json.loads per line; a tool_use round trip
    python tools/bench.py subagents   # a task round trip vs a model call; 4 parallel children's wall time
    python tools/bench.py telemetry [--rounds 7]   # the loop per iteration, OpenTelemetry export on vs off
    python tools/bench.py travel   # sessions search over 1,000,000 events; a 10,000-event export to Claude Code;
                                   # the upgrade of a 1,000,000-event store from before search
    python tools/bench.py acp_client  # an ACP agent's text updates/s vs the bare SDK client; a permission round trip
    python tools/bench.py stats   # monkey stats over 1,000 sessions / 1,000,000 events; storing with summary rows
    python tools/bench.py local_tasks --runs 10    # slow: about 100 runs of the local model

Every figure is ``{"name", "value", "unit", "baseline_name", "baseline_value", "ratio",
"target", "ok"}``: the baseline is measured in the same run because these machines are
noisy, so the ratio is what to compare across runs. ``--json`` prints one JSON array
instead of lines. The exit status is 1 if a figure misses its target.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

# name -> the module in tools/benchmarks/ and its function; imported only when run.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "startup": ("benchmarks.startup", "bench_startup"),
    "checkpoint": ("benchmarks.checkpoint", "bench_checkpoint"),
    "loop": ("benchmarks.loop", "bench_loop"),
    "local": ("benchmarks.local", "bench_local"),
    "sessions": ("benchmarks.sessions", "bench_sessions"),
    "durable": ("benchmarks.durable", "bench_durable"),
    "backends": ("benchmarks.backends", "bench_backends"),
    "parser": ("benchmarks.parser", "bench_parser"),
    "tui": ("benchmarks.tui", "bench_tui"),
    "sandbox": ("benchmarks.sandbox", "bench_sandbox"),
    "local_tasks": ("benchmarks.local_tasks", "bench_local_tasks"),
    "permissions": ("benchmarks.permissions", "bench_permissions"),
    "mcp": ("benchmarks.mcp", "bench_mcp"),
    "plugins": ("benchmarks.plugins", "bench_plugins"),
    "subagents": ("benchmarks.subagents", "bench_subagents"),
    "telemetry": ("benchmarks.telemetry", "bench_telemetry"),
    "travel": ("benchmarks.travel", "bench_travel"),
    "acp_client": ("benchmarks.acp_client", "bench_acp_client"),
    "stats": ("benchmarks.stats", "bench_stats"),
}
TAKES_ARGS = {"local_tasks", "permissions", "telemetry"}
"""Benchmarks that take their own flags (everything bench.py does not know is passed on)."""
SLOW = {"local_tasks"}
"""Left out of a run that names no benchmark (unless flags for it are given)."""


def run_benchmark(name: str, argv: list[str] | None = None) -> list[dict]:
    """The figures of one benchmark (``argv``: its own flags, for those in ``TAKES_ARGS``)."""
    module, function = BENCHMARKS[name]
    bench: Callable[..., list[dict]] = getattr(importlib.import_module(module), function)
    return bench(argv or []) if name in TAKES_ARGS else bench()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON array instead of lines")
    args, extra = parser.parse_known_args(argv)
    names = args.names or [n for n in BENCHMARKS if n not in SLOW or extra]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    if extra and not any(n in TAKES_ARGS for n in names):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    results: list[dict] = []
    for name in names:
        for fig in run_benchmark(name, extra):
            results.append(fig)
            if not args.json:
                print(json.dumps(fig), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if all(f.get("ok", True) for f in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["BENCHMARKS", "run_benchmark", "main"]
