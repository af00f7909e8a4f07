"""``tools/bench.py telemetry`` runs small and prints one well-formed figure (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("opentelemetry.sdk")


def test_a_small_run_prints_the_figure_with_what_the_receiver_got() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "telemetry", "--rounds", "1", "--iterations", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr  # 1: the target missed on a busy machine, still well formed
    (figure,) = [json.loads(line) for line in run.stdout.splitlines()]
    assert figure["name"] == "telemetry_loop_per_iteration" and figure["target"] == "<= 1.1x"
    assert figure["iterations"] == 6 and figure["rounds"] == 1
    assert figure["value"] > 0 and figure["baseline_value"] > 0
    assert figure["ratio"] == pytest.approx(figure["value"] / figure["baseline_value"], abs=1e-3)
    assert figure["received_logs"] > 0 and figure["received_points"] > 0  # the export did reach the receiver
    assert run.returncode == (0 if figure["ok"] else 1)
    bad = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench.py"), "telemetry", "--rounds", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert bad.returncode == 2 and "--rounds and --iterations must be >= 1" in bad.stderr
