#!/usr/bin/env python3
"""monkey's benchmarks: each prints JSON objects, one per line, with a same-run baseline.

    python tools/bench.py startup loop local [--json]

Every figure is ``{"name", "value", "unit", "baseline_name", "baseline_value", "ratio",
"target", "ok"}``: the baseline is measured in the same run because these machines are
noisy, so the ratio is what to compare across runs. ``--json`` prints one JSON array
instead of lines. The exit status is 1 if a figure misses its target.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from benchmarks.common import figure  # noqa: E402


def _startup() -> list[dict]:
    from benchmarks.startup import bench_startup

    return bench_startup()


def _loop() -> list[dict]:
    from benchmarks.loop import bench_loop

    return bench_loop()


def _local() -> list[dict]:
    from benchmarks.local import bench_local

    return bench_local()


def _sessions() -> list[dict]:
    from benchmarks.sessions import bench_sessions

    return bench_sessions()


def _checkpoint() -> list[dict]:
    from benchmarks.checkpoint import bench_checkpoint

    return bench_checkpoint()


def _backends() -> list[dict]:
    from benchmarks.backends import bench_backends

    return bench_backends()


def _parser() -> list[dict]:
    from benchmarks.parser import bench_parser

    return bench_parser()


BENCHMARKS: dict[str, Callable[[], list[dict]]] = {
    "startup": _startup,
    "checkpoint": _checkpoint,
    "loop": _loop,
    "local": _local,
    "sessions": _sessions,
    "backends": _backends,
    "parser": _parser,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON array instead of lines")
    args = parser.parse_args(argv)
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    results: list[dict] = []
    for name in names:
        for fig in BENCHMARKS[name]():
            results.append(fig)
            if not args.json:
                print(json.dumps(fig), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if all(f.get("ok", True) for f in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["figure", "BENCHMARKS", "main"]
