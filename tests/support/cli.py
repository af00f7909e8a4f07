"""The ``monkey`` CLI for tests, two ways with one result (:class:`Run`: exit code, stdout, stderr).

- :func:`run_monkey` starts ``python -m monkey`` as a real process: for what only a process
  shows (signals, exit statuses under signals, pipes, terminals, process trees, ``-v`` logging).
- :func:`invoke` (:func:`invoke_async` from an ``async`` test) runs the same command line in
  this process (a few hundredths of a second instead of more than a second): argv parsed by
  the real parser and dispatched by the real :func:`monkey.cli.run_command`, with its own
  environment, working directory, stdin, stdout and stderr. What ``monkey.cli.main`` does to
  the whole process first (no core dumps, the children's subreaper and guardian, logging
  handlers) is left out, so the test process stays as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    """A finished ``monkey`` command."""

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


def write_script(path: Path, turns: list[dict[str, Any]], **extra: Any) -> Path:
    """Write a scripted-backend script file."""
    path.write_text(json.dumps({"turns": turns, **extra}))
    return path


def monkey_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment a CLI subprocess runs with."""
    # not the runner's COLUMNS / LINES either: a program on a pseudo-terminal takes its size from the terminal
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONKEY_") and k not in ("COLUMNS", "LINES")}
    env["MONKEY_HOME"] = str(home)
    env["MONKEY_USER_SKILLS"] = ""
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # pexpect is a terminal that never answers a cursor position request: told so, the REPL's prompt_toolkit
    # does not wait a second for the answer after every line typed (a real terminal answers at once)
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    env.update(extra)
    return env


def run_monkey(
    args: list[str], *, home: Path, cwd: Path | None = None, input: str | None = None, timeout: float = 60, **env: str
) -> Run:
    """Run ``python -m monkey ARGS`` to completion with no terminal, in a process of its own."""
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


class _Stream(io.TextIOWrapper):
    """A text stream over bytes (``.buffer`` works, as on a real pipe) that is not a terminal."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None, write_through=True)

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8", errors="replace").replace("\r\n", "\n")  # type: ignore[attr-defined]


@contextlib.contextmanager
def _process_state(env: dict[str, str], cwd: Path | None) -> Iterator[None]:
    """os.environ and the working directory as a process started with ``env`` in ``cwd`` would have them."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def invoke(args: list[str], *, home: Path, cwd: Path | None = None, input: str | None = None, **env: str) -> Run:
    """Run ``monkey ARGS`` in this process, as :func:`run_monkey` runs it in another (same result).

    Refused inside a running event loop (an ``async`` test): the command runs its own.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("invoke() runs its own event loop: call run_monkey() from an async test")
    from monkey import cli

    stdin, stdout, stderr = _Stream((input or "").encode()), _Stream(), _Stream()
    with _process_state(monkey_env(home, **env), cwd), contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        saved_stdin, sys.stdin = sys.stdin, stdin
        stack.callback(setattr, sys, "stdin", saved_stdin)
        try:
            code = cli.run_command(list(args))
        except SystemExit as exc:  # argparse: --help, a usage error
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                stderr.write(exc.code + "\n")
        gc.collect()  # what the command left behind is finalised (its database closed), as at a process's end
    return Run(code, stdout.text(), stderr.text())


async def invoke_async(
    args: list[str], *, home: Path, cwd: Path | None = None, input: str | None = None, **env: str
) -> Run:
    """:func:`invoke` from an ``async`` test: the command runs in a thread with its own event loop.

    While it runs, this process's environment, working directory and stdout are the command's
    (as in :func:`invoke`), so use it between the test's own steps, not while something of the
    test runs beside it in the background (then start a process with :func:`run_monkey`).
    """
    return await asyncio.to_thread(invoke, args, home=home, cwd=cwd, input=input, **env)


def stored_events(conn, session_id: str) -> list[tuple[str, bytes]]:  # type: ignore[no-untyped-def]
    """``(type, JSON)`` of every event of a session as the file holds them, read with plain SQL
    (a row of ``n`` deltas is their JSON objects joined by newlines)."""
    out: list[tuple[str, bytes]] = []
    for kind, data, n in conn.execute(
        "SELECT type, data, n FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
    ):
        parts = bytes(data).split(b"\n") if n > 1 else [bytes(data)]
        assert len(parts) == n, "a row holds as many events as it says"
        out += [(kind, part) for part in parts]
    return out


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


async def main_in_thread(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``monkey.cli.main(ARGV)`` in a worker thread from an async test, with what it printed (read
    through pytest's ``capsys``): its exit code, stdout and stderr."""
    from monkey.cli import main

    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def stored_session(workspace: Path, home: Path, tmp_path: Path) -> str:
    """Run one task with the CLI (in this process); the id of the session it stored."""
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(write_script(tmp_path / "first.json", [{"text": "first answer"}])),
            "--cwd",
            str(workspace),
            "--task",
            "first question",
            "--output-format",
            "stream-json",
        ],
        home=home,
    )
    return run.of_type("session_started")[0]["session_id"]
