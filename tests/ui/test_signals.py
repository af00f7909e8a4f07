"""A signal to monkey in a real terminal (tmux): the terminal is left as it was, the running
command is stopped and the exit status names the signal (128 + N).

Each test types a task whose scripted answer runs a long command (``tests/support/fakes/family.py``: a
child and grandchildren that would write after 100 s), sends the signal to monkey while the
command runs, and then compares ``stty -g`` before and after, reads the pane's modes from tmux
(alternate screen, mouse reporting, cursor), checks the exit status, and waits (with a
generous deadline) until every process of the command is gone.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey import children
from tests.support.cli import ROOT, monkey_env
from tests.support.fakes.family_procs import family, family_task, kill_all, wait_gone
from tests.support.procs import monkey_pid
from tests.support.tmux import capture, wait_for

pytestmark = [
    pytest.mark.usefixtures("tmux"),
    pytest.mark.subprocess,
    pytest.mark.skipif(
        shutil.which("tmux") is None or not sys.platform.startswith("linux"), reason="needs tmux and /proc"
    ),
]

MODES = "#{alternate_on} #{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag} #{mouse_sgr_flag} #{cursor_flag}"
"""tmux's view of the pane: alternate screen, the mouse-reporting modes, and whether the cursor shows."""
PLAIN_MODES = "0 0 0 0 0 1"


def modes(session: str) -> str:
    return subprocess.run(
        ["tmux", "display-message", "-p", "-t", session, MODES], capture_output=True, text=True
    ).stdout.strip()


def start(tmp_path: Path, workspace: Path, home: Path, flags: list[str]) -> tuple[str, Path, Path]:
    folder = tmp_path / "family"
    folder.mkdir()
    script = family_task(home, tmp_path, folder)
    env = monkey_env(home, TERM="xterm-256color")
    command = " ".join(
        shlex.quote(a)
        for a in [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            *flags,
        ]
    )
    out = shlex.quote(str(tmp_path))
    shell = (
        f"stty -g > {out}/stty-before; {command}; echo $? > {out}/status; stty -g > {out}/stty-after; "
        "echo MONKEY-EXITED; sleep 60"
    )
    session = f"monkey-sig-{os.getpid()}-{tmp_path.name}"  # unique on a tmux server other runs share
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "120",
            "-y",
            "36",
            "-c",
            str(ROOT),
            *[f"-e{k}={v}" for k, v in env.items() if k in ("MONKEY_HOME", "PYTHONPATH", "TERM")],
            "sh",
            "-c",
            shell,
        ],
        check=True,
        env=env,
    )
    return session, script, folder


def prompt_back(session: str, timeout: float = 20.0) -> str:
    """Wait until the REPL's prompt is back after ``(cancelling)`` (the command's last output
    may be printed between the two)."""
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = capture(session)
        _, found, after = screen.rpartition("(cancelling)")
        if found and "\n›" in after:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"the prompt never came back after (cancelling); the screen was:\n{screen}")


SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("front", ["app", "plain"])
def test_signal_restores_the_terminal_and_stops_the_command(
    workspace: Path, monkey_home: Path, tmp_path: Path, front: str, sig: signal.Signals
) -> None:
    session, script, folder = start(tmp_path, workspace, monkey_home, ["--plain"] if front == "plain" else [])
    procs: dict[str, tuple[int, int]] = {}
    try:
        wait_for(session, "Type a task")
        subprocess.run(["tmux", "send-keys", "-t", session, "-l", "run it"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        procs = family(folder)
        wait_for(session, "Running it.")
        if front == "app":
            assert modes(session).split()[0] == "1"  # the app is in the alternate screen
        os.kill(monkey_pid(script), sig)
        expected = 128 + sig
        if front == "plain" and sig == signal.SIGINT:  # as Ctrl-C: the turn is cancelled, the REPL stays
            assert wait_gone(procs) == []
            prompt_back(session)
            time_left = time.monotonic() + 20
            while "MONKEY-EXITED" not in capture(session) and time.monotonic() < time_left:
                subprocess.run(["tmux", "send-keys", "-t", session, "C-d"], check=True)  # until it reads keys
                time.sleep(0.5)
            expected = 0
        screen = wait_for(session, "MONKEY-EXITED", timeout=30)
        assert (tmp_path / "status").read_text().strip() == str(expected), screen
        assert (tmp_path / "stty-after").read_text() == (tmp_path / "stty-before").read_text()
        assert modes(session) == PLAIN_MODES
        assert "Traceback" not in screen
        assert wait_gone(procs) == []
        assert not list(folder.glob("wrote-*"))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        kill_all(procs)


@pytest.mark.parametrize("front", ["app", "plain"])
def test_closing_the_terminal_stops_monkey_and_its_command(
    workspace: Path, monkey_home: Path, tmp_path: Path, front: str
) -> None:
    session, script, folder = start(tmp_path, workspace, monkey_home, ["--plain"] if front == "plain" else [])
    procs: dict[str, tuple[int, int]] = {}
    try:
        wait_for(session, "Type a task")
        subprocess.run(["tmux", "send-keys", "-t", session, "-l", "run it"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        procs = family(folder)
        pid = monkey_pid(script)
        start_time = children.start_time(pid)
        subprocess.run(["tmux", "kill-session", "-t", session], check=True)  # the terminal is gone: SIGHUP
        assert wait_gone({"monkey": (pid, start_time or 0), **procs}) == []
        assert not list(folder.glob("wrote-*"))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        kill_all(procs)
