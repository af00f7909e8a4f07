"""The processes of the family ``tests/fakes/family.py`` starts, as the tests of children dying
with monkey read, wait for and end them: each by name, as ``(pid, start time)``."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from monkey import children

__all__ = ["FAMILY", "Procs", "family", "kill_all", "living", "wait_gone"]

FAMILY = Path(__file__).with_name("family.py")
"""The command: ``python family.py DIR MODE``."""

Procs = dict[str, tuple[int, int]]


def family(folder: Path, deadline: float = 30.0) -> Procs:
    """The family's processes by name, once it has written them to ``folder/pids``."""
    end = time.monotonic() + deadline
    while not (folder / "pids").exists():
        assert time.monotonic() < end, "the family never started"
        time.sleep(0.02)
    out = {}
    for line in (folder / "pids").read_text().splitlines():
        pid, start, name = line.split()
        out[name] = (int(pid), int(start))
    return out


def living(procs: Procs) -> list[str]:
    """The names of the processes still running."""
    return [name for name, (pid, start) in procs.items() if children.alive(pid, start)]


def wait_gone(procs: Procs, deadline: float = 20.0) -> list[str]:
    """Wait until none of ``procs`` runs; the names still running at the deadline (none: ``[]``)."""
    end = time.monotonic() + deadline
    while (left := living(procs)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def kill_all(procs: Procs) -> None:
    """SIGKILL to every process of ``procs`` still running (the tests' own clean-up)."""
    for pid, start in procs.values():
        if children.alive(pid, start):
            os.kill(pid, signal.SIGKILL)
