"""The real ``monkey agent`` in a real terminal (tmux): type a task, approve, quit."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, monkey_env, write_script
from tests.support.tmux import wait_for

pytestmark = [
    pytest.mark.usefixtures("tmux"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def pane_title(session: str) -> str:
    return subprocess.run(
        ["tmux", "display-message", "-p", "-t", session, "#{pane_title}"], capture_output=True, text=True
    ).stdout


RENAME = [
    {
        "text": "Renaming.",
        "tool_calls": [
            {"name": "file_edit", "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"}}
        ],
    },
    {"text": "All done here."},
]
"""The scripted model: one edit that needs approval, then an answer."""


def start_in_tmux(
    workspace: Path, monkey_home: Path, tmp_path: Path, flags: list[str], *, before: str = "", rows: int = 36
) -> tuple[str, Path]:
    """``monkey agent FLAGS`` on the scripted model in a new tmux session; its name and the exit-status file."""
    script = write_script(tmp_path / "script.json", RENAME)
    status = tmp_path / "status"
    # unbuffered, as CI runs it: a frame the terminal takes part of is one write(2) cut short (see whole_writes)
    env = monkey_env(monkey_home, TERM="xterm-256color", PYTHONUNBUFFERED="1")
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
            *flags,
        ]
    )
    shell = f"{before}{command}; echo $? > {shlex.quote(str(status))}; echo MONKEY-EXITED; sleep 30"
    session = f"monkey-test-{tmp_path.name}"
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
            str(rows),
            "-c",
            str(ROOT),
            *[f"-e{k}={v}" for k, v in env.items() if k in ("MONKEY_HOME", "PYTHONPATH", "TERM", "PYTHONUNBUFFERED")],
            shell,
        ],
        check=True,
        env=env,
    )
    return session, status


@pytest.mark.parametrize("flags", [[], ["--task", "rename the project", "--tui"]], ids=["typed", "task-tui"])
def test_agent_app_in_tmux(workspace: Path, monkey_home: Path, tmp_path: Path, flags: list[str]) -> None:
    session, status = start_in_tmux(workspace, monkey_home, tmp_path, flags)
    try:
        wait_for(session, "Type a task")
        if not flags:
            subprocess.run(["tmux", "send-keys", "-t", session, "-l", "rename the project"], check=True)
            subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        wait_for(session, "approve once")  # shown once the dialog takes answers (not in its first moments)
        assert "monkey · approval needed" in pane_title(session)  # seen in the tab while the person is away
        subprocess.run(["tmux", "send-keys", "-t", session, "y"], check=True)
        if flags:  # --tui --task: the app closes by itself and leaves the answer on the terminal
            screen = wait_for(session, "MONKEY-EXITED")
            assert "All done here." in screen
        else:
            screen = wait_for(session, "All done here.")
            assert "file_edit README.md" in screen
            subprocess.run(["tmux", "send-keys", "-t", session, "C-d"], check=True)
            screen = wait_for(session, "MONKEY-EXITED")
        assert (workspace / "README.md").read_text() == "# project\n"
        assert "Type a task" not in screen  # the alternate screen is gone: the terminal is restored
        assert status.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_inline_app_keeps_the_conversation_in_the_scrollback(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    session, status = start_in_tmux(
        workspace, monkey_home, tmp_path, ["--inline"], before="echo BEFORE-MONKEY; ", rows=40
    )
    try:
        screen = wait_for(session, "Type a task")  # the message box is there from the start
        assert "BEFORE-MONKEY" in screen  # below the shell's own lines, not over them
        subprocess.run(["tmux", "send-keys", "-t", session, "-l", "rename the project"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        # the dialog's title (its buttons may sit below a short inline region when the workspace's path is long);
        # keys typed as a dialog opens are not answers (its guard, 0.4 s from when it opened, before it was drawn):
        # a second after it is seen, a key is an answer whatever the machine's load
        wait_for(session, "Approve file_edit?")
        time.sleep(1.0)
        subprocess.run(["tmux", "send-keys", "-t", session, "y"], check=True)
        screen = wait_for(session, "All done here.")
        assert "Type a task" in screen  # the view did not collapse after the turn
        subprocess.run(["tmux", "send-keys", "-t", session, "C-d"], check=True)
        screen = wait_for(session, "MONKEY-EXITED")
        assert "Type a task" not in screen  # the app's region is gone...
        lines = screen.splitlines()
        texts = ("BEFORE-MONKEY", "› rename the project", "Renaming.", "file_edit README.md", "All done here.")
        order = [next((i for i, line in enumerate(lines) if text in line), -1) for text in (*texts, "MONKEY-EXITED")]
        # ...and the conversation stayed, in order
        assert -1 not in order and order == sorted(order), f"{order}\n{screen}"
        assert (workspace / "README.md").read_text() == "# project\n"
        assert status.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
