"""``permissions``: decision time per shell line (parse + match) against spawning ``true``.

Every line of the corpus (tools/benchmarks/shell_lines.txt, over 1,000 command lines of the
kinds developers and coding agents run) is decided by an :class:`ApprovalPolicy` with
realistic rules (allow and deny rules, read-only commands on), with the parse cache cleared
before each decision so that every line is really parsed. The baseline, measured in the same
run and interleaved with the passes over the corpus (three spawns after every 50 decisions, so
both see the same load), is ``subprocess.run(["true"])``: what running even the cheapest command
costs. Targets: median decision <= 1 ms, and <= 0.05x the spawn.

A spawn right after other work, as an agent's tool call comes, takes longer than one in a tight
loop of spawns (1-1.5 ms here against 2-4 ms): the tight loop's median is printed too
(``spawn_in_a_row_ms``, ``ratio_to_spawn_in_a_row``), as the harsher comparison.

    python tools/bench.py permissions [--sample N] [--passes N]
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from benchmarks.common import figure, median

CORPUS = Path(__file__).resolve().parent / "shell_lines.txt"
ALLOW = [
    "shell_execute(make)",
    "shell_execute(pytest)",
    "shell_execute(npm run)",
    "shell_execute(npm test)",
    "shell_execute(git add)",
    "shell_execute(git commit)",
    "shell_execute(python -m pytest)",
    "shell_execute(cargo test)",
    "shell_execute(go test)",
    "shell_execute(ruff)",
    "shell_execute(mkdir -p)",
]
DENY = [
    "shell_execute(curl)",
    "shell_execute(wget)",
    "shell_execute(rm -rf /)",
    "shell_execute(sudo)",
    "shell_execute(git push --force)",
    "shell_execute(ssh)",
]


def load_corpus(path: Path = CORPUS) -> list[str]:
    """The command lines of the corpus: one a line, a line ending in a backslash continued on the
    next (kept as the shell's line continuation), blank lines and ``#`` comment lines left out."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not pending and (not raw.strip() or raw.startswith("#")):
            continue
        pending = f"{pending}\n{raw}" if pending else raw
        if not raw.endswith("\\"):
            lines.append(pending)
            pending = ""
    if pending:
        lines.append(pending)
    return lines


def _decide_all(policy, lines: list[str]) -> tuple[list[float], dict[str, int]]:  # type: ignore[no-untyped-def]
    from monkey.permissions.shell_parse import parse_line

    times: list[float] = []
    outcomes = {"allowed": 0, "asks": 0, "denied": 0}
    for line in lines:
        parse_line.cache_clear()  # every decision parses its line
        start = time.perf_counter()
        decision = policy.check("shell_execute", {"command": line})
        times.append(time.perf_counter() - start)
        outcomes["asks" if decision is None else "allowed" if decision.approved else "denied"] += 1
    return times, outcomes


def _spawn_true() -> float:
    start = time.perf_counter()
    subprocess.run(["true"], check=True)
    return time.perf_counter() - start


def bench_permissions(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="bench.py permissions")
    parser.add_argument("--sample", type=int, default=0, help="decide only the first N lines (0: all)")
    parser.add_argument("--passes", type=int, default=3, help="passes over the corpus (default 3)")
    args = parser.parse_args(argv or [])
    if args.sample < 0 or args.passes < 1:
        parser.error("--sample must be >= 0 and --passes >= 1")
    from monkey.permissions.policy import ApprovalPolicy

    lines = load_corpus()
    if args.sample:
        lines = lines[: args.sample]
    policy = ApprovalPolicy.from_strings(allow=ALLOW, deny=DENY)
    _decide_all(policy, lines[:50])  # warm up: tree-sitter's grammar, the imports
    decisions: list[float] = []
    spawns: list[float] = []
    outcomes: dict[str, int] = {}
    chunk = 50  # decisions and spawns alternate in small chunks, so both see the same load on the machine
    for _ in range(args.passes):
        outcomes = {}
        for start in range(0, len(lines), chunk):
            times, counts = _decide_all(policy, lines[start : start + chunk])
            decisions.extend(times)
            outcomes = {k: outcomes.get(k, 0) + v for k, v in counts.items()}
            spawns.extend(_spawn_true() for _ in range(3))
    in_a_row = median([_spawn_true() for _ in range(30)]) * 1000
    value, baseline = median(decisions) * 1000, median(spawns) * 1000
    worst = sorted(decisions)[int(0.95 * (len(decisions) - 1))] * 1000
    common = {
        "lines": len(lines),
        "passes": args.passes,
        "p95_ms": round(worst, 4),
        **outcomes,
        "spawn_in_a_row_ms": round(in_a_row, 4),
        "ratio_to_spawn_in_a_row": round(value / in_a_row, 4),
    }
    ratio = value / baseline
    return [
        figure(
            "permission decision per shell line (median)",
            value,
            "ms",
            "subprocess.run(['true'])",
            baseline,
            target="<= 1 ms",
            ok=value <= 1.0,
            **common,
        ),
        figure(
            "permission decision per shell line (median) / spawn",
            value,
            "ms",
            "subprocess.run(['true'])",
            baseline,
            ratio=ratio,
            target="ratio <= 0.05",
            ok=ratio <= 0.05,
            **common,
        ),
    ]
