"""Reading a tmux pane as a person would see it (the tests start the tmux server through the
``tmux`` fixture, which gives each test a server of its own)."""

from __future__ import annotations

import subprocess
import time


def capture(session: str) -> str:
    """What the pane of ``session`` shows now."""
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, text: str, timeout: float = 20.0) -> str:
    """The pane once it shows ``text`` (fails after ``timeout`` seconds, with what it showed)."""
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = capture(session)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")
