"""The processes of the family ``tests/support/fakes/family.py`` starts, as the tests of children dying
with monkey read, wait for and end them: each by name, as ``(pid, start time)``."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from monkey import children
from tests.support.cli import write_script
from tests.support.procs import pids_running

__all__ = ["FAMILY", "Procs", "family", "family_task", "forked", "kill_all", "living", "wait_gone"]

FAMILY = Path(__file__).with_name("family.py")
"""The command: ``python family.py DIR MODE``."""

Procs = dict[str, tuple[int, int]]


def family_task(home: Path, tmp_path: Path, folder: Path) -> Path:
    """monkey's config in ``home`` and a scripted answer (the returned script) whose one call runs the
    family in ``folder`` (``wait`` mode, 300 s allowed); the call's text is ``Running it.``.

    Unsandboxed, the command allowed by the user's own rule: what is tested is monkey's own
    supervision, which is all there is without bubblewrap (under Landlock, say); in bubblewrap's PID
    namespace the kernel kills the whole family with the sandbox anyway."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[shell]\nsandbox = "off"\n[approvals]\nallow = ["shell_execute"]\n')
    return write_script(
        tmp_path / "script.json",
        [
            {
                "text": "Running it.",
                "tool_calls": [
                    {
                        "name": "shell_execute",
                        "arguments": {"command": f"{sys.executable} {FAMILY} {folder} wait", "timeout": 300},
                    }
                ],
            },
            {"text": "done"},
        ],
    )


def family(folder: Path, deadline: float = 90.0) -> Procs:
    """The family's processes by name, once it has written them to ``folder/pids`` (the deadline is
    long: a loaded machine may take many seconds to start them; a passing test never waits it out)."""
    end = time.monotonic() + deadline
    while not (folder / "pids").exists():
        assert time.monotonic() < end, "the family never started"
        time.sleep(0.02)
    out = {}
    for line in (folder / "pids").read_text().splitlines():
        pid, start, name = line.split()
        out[name] = (int(pid), int(start))
    return out


def forked(folder: Path) -> bool:
    """Whether a child of this process runs the family in ``folder`` (started, its own children maybe not yet)."""
    return any(children.parent_of(pid) == os.getpid() for pid in pids_running(str(folder)))


def living(procs: Procs) -> list[str]:
    """The names of the processes still running."""
    return [name for name, (pid, start) in procs.items() if children.alive(pid, start)]


def wait_gone(procs: Procs, deadline: float = 60.0) -> list[str]:
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
