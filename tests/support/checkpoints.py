"""Making changes around a checkpoint guard, and looking at a folder or a repository as a person would."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.journal import Entry
from tests.support.cli import invoke, monkey_env, Run, write_script


def change(
    guard: CheckpointGuard,
    paths: list[str] | None,
    do: Callable[[], object],
    *,
    tool: str = "file_write",
    session: str = "s1",
    turn: int = 1,
) -> Entry:
    """Checkpoint, change, record: what the loop does around one tool call."""
    entry = guard.begin(tool=tool, paths=paths, session_id=session, turn=turn, call_id="call")
    do()
    assert guard.finish(entry, ok=True) == ""
    return entry


def tree_digest(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    """Every entry below ``root``: mode and content hash (link target for symlinks)."""
    out: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.relpath(os.path.join(folder, d), root) not in skip]
        for name in dirs + files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = (st.st_mode, os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = (st.st_mode, "dir")
            else:
                out[rel] = (st.st_mode, hashlib.sha256(Path(full).read_bytes()).hexdigest())
    return out


def git(ws: Path, *args: str) -> str:
    """Plain git in the user's repository (the way the user would run it)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ws.parent)}
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True, env=env).stdout


def agent(ws: Path, home: Path, tmp: Path, turns: list[dict[str, Any]], *flags: str) -> Run:
    """``monkey agent`` on the scripted ``turns`` and a last "done", in ``ws``, run in this process."""
    script = write_script(tmp / "script.json", turns + [{"text": "done"}])
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            "--task",
            "go",
            *flags,
        ],
        home=home,
    )


def py(code: str) -> str:
    """A shell_execute command that runs Python code (no shell needed)."""
    return f"{sys.executable} -c {json.dumps(code)}"


def waiting_command(tmp: Path, name: str, writes: str) -> str:
    """A shell command that writes a file in the workspace (the sign it started: the sandbox lets it
    write nowhere else), and waits for a go-ahead file."""
    go = tmp / f"{name}.go"
    code = tmp / f"{name}.py"
    code.write_text(
        f"import pathlib, time\n"
        f"pathlib.Path({writes!r}).write_text('made by the command\\n')\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.02)\n"
    )
    return f"{sys.executable} {code}"


def start_agent(
    ws: Path, home: Path, tmp: Path, name: str, turns: list[dict[str, Any]], **env: str
) -> subprocess.Popen[str]:
    script = write_script(tmp / f"{name}.json", turns + [{"text": "done"}])
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            name,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(home, **env),
    )


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"monkey ended first: {proc.communicate()}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]
