"""``tools/bench.py local_tasks`` refuses bad flags in one line, before any model runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "tools" / "bench.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["local_tasks", "--tasks", "nope"], "unknown task(s) nope; known: hello, sum"),
        (["local_tasks", "--runs", "0"], "--runs and --jobs must be at least 1"),
        (["local_tasks", "--baseline", "/"], "--baseline /: not a monkey checkout"),
        (["startup", "--runs", "3"], "unrecognized arguments: --runs 3"),
    ],
)
def test_bad_flags_are_refused(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert proc.stdout == ""
