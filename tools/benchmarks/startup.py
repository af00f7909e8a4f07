"""``startup``: wall time of ``monkey --version`` against ``python -c pass``; target ratio <= 3."""

from __future__ import annotations

import subprocess
import time

from benchmarks.common import PYTHON, figure, interleaved, median


def _timer(argv: list[str]):
    def run() -> float:
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    return run


def bench_startup(runs: int = 15) -> list[dict]:
    """Median wall times over interleaved runs (the console script, then the bare interpreter)."""
    from pathlib import Path

    # The console script installed beside this interpreter (not a version-manager shim,
    # which would add its own start-up to ours).
    script = Path(PYTHON).parent / "monkey"
    argv = [str(script), "--version"] if script.exists() else [PYTHON, "-m", "monkey", "--version"]
    ours, base = interleaved(_timer(argv), _timer([PYTHON, "-c", "pass"]), runs)
    value, baseline = median(ours), median(base)
    ratio = value / baseline
    return [
        figure(
            "startup_version",
            value,
            "s",
            "python -c pass",
            baseline,
            target="ratio <= 3",
            ok=ratio <= 3,
            command=" ".join(argv),
        )
    ]
