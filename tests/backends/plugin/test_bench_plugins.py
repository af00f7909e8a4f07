"""``tools/bench.py plugins`` runs and prints its two figures, well formed (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_benchmark_prints_both_figures() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "plugins"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=ROOT,
    )
    assert run.returncode in (0, 1), run.stderr  # 1: a target missed on a busy machine, still well formed
    text, trip = [json.loads(line) for line in run.stdout.splitlines()]
    assert (text["name"], text["unit"], text["target"]) == ("plugin_text_events", "events/s", "ratio >= 0.5")
    assert text["notifications"] == 100_000 and text["value"] > 0 and text["baseline_value"] > 0
    assert (trip["name"], trip["unit"], trip["calls"]) == ("plugin_tool_round_trip", "ms", 200)
    assert trip["value"] > trip["baseline_value"] > 0 and trip["overhead_ms"] > 0
