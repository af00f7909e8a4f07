"""monkey makes itself undumpable at start (Linux): a child of the same, non-root user cannot read
its ``/proc/<pid>/environ``. Real processes: the CLI entry, and a Python run as ``nobody``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT, monkey_env

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's"),
]

READER = """
import os, subprocess, sys
sys.path.insert(0, {root!r})
from monkey.cli import undumpable
if sys.argv[1] == "undumpable":
    assert undumpable()
done = subprocess.run(["cat", f"/proc/{{os.getpid()}}/environ"], capture_output=True)
print("READ" if done.returncode == 0 and b"PATH=" in done.stdout else "DENIED")
"""


def _others_can_read(path: Path) -> bool:
    """Whether a user like nobody can reach and read ``path`` (every folder above it searchable)."""
    return all(p.stat().st_mode & 0o005 == 0o005 for p in [path, *path.parents])


def test_the_cli_entry_makes_monkey_undumpable(monkey_home: Path) -> None:
    code = (
        "import ctypes, monkey.cli; monkey.cli.main(['sessions', 'list', '--json']); "
        "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
    )  # PR_GET_DUMPABLE
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=monkey_env(monkey_home),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("dumpable 0")


@pytest.mark.skipif(
    os.geteuid() != 0
    or not shutil.which("setpriv")
    or not os.path.exists("/usr/bin/python3")
    or not _others_can_read(ROOT),
    reason="runs a process as nobody: needs root, setpriv, a system Python and a readable checkout",
)
def test_a_child_of_the_same_user_cannot_read_an_undumpable_parent() -> None:
    code = READER.format(root=str(ROOT))
    results = {}
    for mode in ("dumpable", "undumpable"):
        done = subprocess.run(
            ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3", "-c", code, mode],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        results[mode] = done.stdout.strip()
    assert results == {"dumpable": "READ", "undumpable": "DENIED"}
