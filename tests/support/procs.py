"""Processes as the tests look for them in /proc."""

from __future__ import annotations

import threading
import os
import time
from pathlib import Path


def pids_running(marker: str, where: str = "cmdline") -> list[int]:
    """Live processes whose command line (or ``where="environ"``: environment) holds ``marker``
    (seen from here, whatever PID namespace they run in)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            text = Path(f"/proc/{name}/{where}").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in text and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def monkey_pid(script: Path, deadline: float = 20.0) -> int:
    """The monkey process started with this script (found by its command line in /proc)."""
    end = time.monotonic() + deadline
    want = str(script).encode()
    while time.monotonic() < end:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if want in cmdline and b"monkey" in cmdline:
                return int(name)
        time.sleep(0.05)
    raise AssertionError("monkey never started")


def store_threads() -> set[threading.Thread]:
    """aiosqlite's connection threads alive in this process (not daemons: one left open keeps a process alive)."""
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name and t.is_alive()}
