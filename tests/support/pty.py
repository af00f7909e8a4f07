"""``monkey`` on a pseudo-terminal (pexpect)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.cli import monkey_env, write_script

PTY_TIMEOUT = 90
"""Seconds a test waits for what it expects on a pseudo-terminal before it fails: long, because a
loaded machine may take many seconds to start Python and Textual; a passing test never waits it out."""


def spawn_repl(
    workspace: Path, home: Path, script: Path, *flags: str, timeout: float = PTY_TIMEOUT, columns: int = 120
):  # type: ignore[no-untyped-def]
    """``monkey agent --plain`` on a pty (pexpect) with the scripted backend."""
    import pexpect

    return pexpect.spawn(
        sys.executable,
        [
            "-m",
            "monkey",
            "agent",
            "--plain",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            *flags,
        ],
        env=monkey_env(home, TERM="xterm"),
        encoding="utf-8",
        timeout=timeout,
        dimensions=(40, columns),
    )


def refuse_without_reason(child) -> None:  # type: ignore[no-untyped-def]
    """Answer monkey's inline approval question on a pty with no, and give the model no reason."""
    child.sendline("n")
    child.expect_exact("tell the model why")
    child.sendline("")


SLOW = f"{sys.executable} -c \"import time; print('tool is running', flush=True); time.sleep(60)\""


def sleeper_script(tmp_path: Path) -> Path:
    """A script whose first turn runs :data:`SLOW` (it asks for approval first)."""
    return write_script(
        tmp_path / "s.json",
        [
            {"text": "Running it.", "tool_calls": [{"name": "shell_execute", "arguments": {"command": SLOW}}]},
            {"text": "never reached"},
        ],
    )


def spawn_task(workspace: Path, home: Path, script: Path, *flags: str, command: str = ""):  # type: ignore[no-untyped-def]
    """``monkey agent --task`` on a pty (pexpect) with the scripted backend; ``command``: shell words after it
    (the line runs through ``/bin/sh``, for redirections)."""
    import pexpect

    argv = [
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
        "--task",
        "do it",
        *flags,
    ]
    if command:  # through a shell, for redirections
        return pexpect.spawn(
            "/bin/sh",
            ["-c", " ".join(f"'{a}'" for a in argv) + " " + command],
            env=monkey_env(home, TERM="xterm"),
            encoding="utf-8",
            timeout=PTY_TIMEOUT,
            dimensions=(40, 120),
        )
    return pexpect.spawn(
        argv[0],
        argv[1:],
        env=monkey_env(home, TERM="xterm"),
        encoding="utf-8",
        timeout=PTY_TIMEOUT,
        dimensions=(40, 120),
    )
