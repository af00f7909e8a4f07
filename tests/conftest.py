"""Fixtures shared by the whole suite: temporary workspaces, an isolated monkey home,
and a runner for the real ``monkey`` CLI as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def monkey_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own monkey home, so no user config leaks in."""
    home = tmp_path_factory.mktemp("monkey-home")
    monkeypatch.setenv("MONKEY_HOME", str(home))
    monkeypatch.setenv("MONKEY_USER_SKILLS", "")  # nor skills from the person's ~/.agents/skills
    return home


def init_git_workspace(ws: Path, git_home: Path) -> Path:
    """Make ``ws`` a real git repository on branch ``main`` with one commit (a README)."""
    ws.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(git_home)}
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=env)
    (ws / "README.md").write_text("# proj\n")
    subprocess.run(["git", "-C", str(ws), "add", "-A"], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        check=True,
        env=env,
    )
    return ws


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A real git repository with one commit, inside a parent folder with room for siblings."""
    return init_git_workspace(tmp_path / "proj", tmp_path)


@dataclass
class Run:
    """A finished ``monkey`` process."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        """stdout parsed as JSON lines."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """The events of one type."""
        return [e for e in self.events if e["type"] == kind]


def stored_events(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, bytes]]:
    """``(type, JSON)`` of every event of a session as the file holds them, read with plain SQL
    (a row of ``n`` deltas is their JSON objects joined by newlines)."""
    out: list[tuple[str, bytes]] = []
    for kind, data, n in conn.execute("SELECT type, data, n FROM events WHERE session_id = ? ORDER BY seq",
                                      (session_id,)):
        parts = bytes(data).split(b"\n") if n > 1 else [bytes(data)]
        assert len(parts) == n, "a row holds as many events as it says"
        out += [(kind, part) for part in parts]
    return out


def write_script(path: Path, turns: list[dict[str, Any]], **extra: Any) -> Path:
    """Write a scripted-backend script file."""
    path.write_text(json.dumps({"turns": turns, **extra}))
    return path


def monkey_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment a CLI subprocess runs with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONKEY_")}
    env["MONKEY_HOME"] = str(home)
    env["MONKEY_USER_SKILLS"] = ""
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_monkey(
    args: list[str], *, home: Path, cwd: Path | None = None, input: str | None = None, timeout: float = 60, **env: str
) -> Run:
    """Run ``python -m monkey ARGS`` to completion with no terminal."""
    proc = subprocess.run(
        [sys.executable, "-m", "monkey", *args],
        cwd=cwd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=monkey_env(home, **env),
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def refuse_without_reason(child) -> None:  # type: ignore[no-untyped-def]
    """Answer monkey's inline approval question on a pty with no, and give the model no reason."""
    child.sendline("n")
    child.expect_exact("tell the model why")
    child.sendline("")


def pids_running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (seen from here, whatever PID namespace they run in)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


@pytest.fixture
def scripted(workspace: Path, monkey_home: Path, tmp_path: Path):
    """Run a scripted task in ``workspace``: ``scripted(turns, *flags) -> Run``."""

    def run(turns: list[dict[str, Any]], *flags: str, fmt: str = "stream-json", **kw: Any) -> Run:
        script = write_script(tmp_path / "script.json", turns)
        args = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace),
                "--output-format", fmt, *flags]
        if not any(f in ("-t", "--task") for f in flags):
            args += ["--task", "do the thing"]
        return run_monkey(args, home=monkey_home, **kw)

    return run


def spawn_repl(workspace: Path, home: Path, script: Path, *flags: str, timeout: int = 30,
               columns: int = 120):  # type: ignore[no-untyped-def]
    """``monkey agent --plain`` on a pty (pexpect) with the scripted backend."""
    import pexpect

    return pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--plain", "--backend", "scripted", "--script", str(script),
         "--cwd", str(workspace), *flags],
        env=monkey_env(home, TERM="xterm"), encoding="utf-8", timeout=timeout, dimensions=(40, columns),
    )


@pytest.fixture
def tmux(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tmux server of this test's own: every ``tmux`` the test runs (and its children) finds it
    through ``TMUX_TMPDIR``, so runs in parallel never share sessions; it is killed afterwards.
    The folder is a short one under /tmp (a socket's path has a length limit)."""
    folder = Path(tempfile.mkdtemp(prefix="monkey-tmux-", dir="/tmp"))
    monkeypatch.setenv("TMUX_TMPDIR", str(folder))
    monkeypatch.delenv("TMUX", raising=False)  # a test run from inside tmux must not reach that server
    try:
        yield folder
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, env={**os.environ, "TMUX_TMPDIR": str(folder)})
        shutil.rmtree(folder, ignore_errors=True)


MARK_BY_FIXTURE = {"tmux": "tmux", "llama": "local_model", "llama_url": "local_model"}
"""Fixtures that make a test of a kind: a test using one (directly or through another fixture) is marked."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that use a fixture of a kind (``-m "not local_model"`` then leaves them out)."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in MARK_BY_FIXTURE:
                item.add_marker(MARK_BY_FIXTURE[fixture])


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject) spreads a run of folders over the cores; a run of named test files
    (``pytest tests/x.py -k y``) stays in one process, which starts sooner."""
    args = [a.split("::")[0] for a in config.args]
    if args and all(a.endswith(".py") for a in args):
        return 0
    return None  # xdist's own count (the cores, or PYTEST_XDIST_AUTO_NUM_WORKERS)
