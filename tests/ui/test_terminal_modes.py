"""Every terminal mode the app changes comes back on every catchable signal, every time (real tmux).

The app is left idle after a turn (which set the window title), then stopped by a signal; tmux's
view of the pane afterwards must be the one from before monkey started: the cursor shown
(``#{cursor_flag}``), autowrap on (``#{wrap_flag}``), the normal screen, no mouse reporting, and
the pane's title as it was. Each signal is tried several times: an exit path that restores the
terminal only some of the time fails here.
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

from tests.support.cli import ROOT, monkey_env, write_script
from tests.support.procs import monkey_pid
from tests.support.tmux import wait_for

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or not sys.platform.startswith("linux"), reason="needs tmux and /proc"
)

MODES = (
    "#{cursor_flag} #{wrap_flag} #{alternate_on} #{mouse_any_flag} #{mouse_button_flag} "
    "#{mouse_standard_flag} #{mouse_sgr_flag} #{pane_title}"
)
RUNS = 3


def _tmux(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """``tmux ARGS`` on the test's own server (the ``tmux`` fixture's ``TMUX_TMPDIR``)."""
    return subprocess.run(["tmux", *args], capture_output=True, text=True, **kw)  # type: ignore[call-overload]


@pytest.fixture(autouse=True)
def _server(tmux: Path):  # type: ignore[no-untyped-def]
    """A tmux server of this test's own (the ``tmux`` fixture: parallel runs never share one, and it is
    killed afterwards), kept by a session of its own: a server whose last session ended exits, and a
    new session made meanwhile fails with 'server exited unexpectedly'."""
    _tmux("new-session", "-d", "-s", "keeper", "sleep", "3600", check=True)
    yield


def _modes(session: str) -> str:
    return _tmux("display-message", "-p", "-t", session, MODES).stdout.strip()


def _run_once(
    tmp_path: Path, workspace: Path, home: Path, sig: int, n: int, busy: bool = False
) -> tuple[str, str, str]:
    """Start the app in a fresh tmux session, run one turn, signal the idle app (``busy``: while the turn
    runs a command); (before, after, status)."""
    out = tmp_path / f"run{n}"
    out.mkdir()
    sleeps = f'{sys.executable} -c "import time; time.sleep(120)"'
    script = write_script(
        out / "s.json",
        [
            {"text": f"answered {n}", "tool_calls": [{"name": "shell_execute", "arguments": {"command": sleeps}}]}
            if busy
            else {"text": f"answered {n}"},
            {"text": "never"},
        ],
    )
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
        ]
    )
    q = shlex.quote(str(out))
    shell = (
        f"printf '\\033]2;before-monkey\\007'; tmux display-message -p -t \"$TMUX_PANE\" '{MODES}' > {q}/before; "
        f"{command}; echo $? > {q}/status; echo MONKEY-EXITED; sleep 60"
    )
    session = f"monkey-modes-{os.getpid()}-{tmp_path.name}-{n}"
    made = _tmux(
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
        env=env,
    )
    assert made.returncode == 0, made.stderr
    try:
        wait_for(session, "Type a task", timeout=60)
        _tmux("send-keys", "-t", session, "-l", "go", check=True)
        _tmux("send-keys", "-t", session, "Enter", check=True)
        wait_for(session, f"answered {n}", timeout=60)
        end = time.monotonic() + 30
        while "monkey" not in _modes(session) and time.monotonic() < end:  # the title the turn set
            time.sleep(0.05)
        os.kill(monkey_pid(script), sig)
        screen = wait_for(session, "MONKEY-EXITED", timeout=60)
        assert "Traceback" not in screen, screen
        return (out / "before").read_text().strip(), _modes(session), (out / "status").read_text().strip()
    finally:
        _tmux("kill-session", "-t", session)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT], ids=lambda s: s.name)
def test_every_mode_comes_back_after_a_signal_to_the_idle_app(
    workspace: Path, monkey_home: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    seen = [_run_once(tmp_path, workspace, monkey_home, sig, n) for n in range(RUNS)]
    for before, _after, status in seen:
        assert before.startswith("1 1 0 0 0 0 0 before-monkey"), before
        assert status == str(128 + sig)
    assert [after for _, after, _ in seen] == [before for before, _, _ in seen]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_every_mode_comes_back_after_a_signal_during_a_turn(
    workspace: Path, monkey_home: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """The title says ``working`` while the command runs; the signal stops the turn and the app."""
    seen = [_run_once(tmp_path, workspace, monkey_home, sig, n, busy=True) for n in range(RUNS)]
    for before, _after, status in seen:
        assert before.startswith("1 1 0 0 0 0 0 before-monkey"), before
        assert status == str(128 + sig)
    assert [after for _, after, _ in seen] == [before for before, _, _ in seen]
