"""What ``monkey agent --task`` prints and how it ends, run as a person runs it: a real
subprocess (a pipe its reader closes, like ``| head``), the scripted backend, the real store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import invoke, monkey_env, write_script
from tests.support.script import call


def waiter(tmp_path: Path) -> str:
    """A command that prints a line, then waits (up to a minute) until the file ``go`` exists."""
    wait = tmp_path / "wait.py"
    wait.write_text(
        "import pathlib, time\nprint('waiting', flush=True)\nend = time.monotonic() + 60\n"
        "while not pathlib.Path('go').exists() and time.monotonic() < end:\n    time.sleep(0.02)\n"
        "print('\\n'.join(f'line {i}' for i in range(200)))\n"
    )
    return f"{sys.executable} {wait}"


@pytest.mark.subprocess
@pytest.mark.parametrize("fmt", ["text", "stream-json"])
def test_a_closed_stdout_ends_quietly_and_keeps_the_session(
    fmt: str, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "First I run it.", "tool_calls": [call("shell_execute", command=waiter(tmp_path))]},
            {"text": "never shown " * 50, "tool_calls": [call("file_write", path="late.txt", content="x")]},
            {"text": "done"},
        ],
    )
    proc = subprocess.Popen(
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
            str(workspace),
            "--no-approval",
            "--output-format",
            fmt,
            "--task",
            "run it",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=monkey_env(monkey_home),
    )
    assert proc.stdout is not None and proc.stderr is not None
    seen = []
    while not seen or b"waiting" not in seen[-1]:  # like `| head -N`: read a few lines, then exit
        seen.append(proc.stdout.readline())
        assert seen[-1], b"".join(seen)
    proc.stdout.close()
    (workspace / "go").write_text("")  # only now does the task print more
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr
    assert not (workspace / "late.txt").exists(), "monkey stopped when its reader went away"
    listed = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    (session,) = json.loads(listed.stdout)
    exported = invoke(["sessions", "export", session["id"]], home=monkey_home)
    stored = [json.loads(line) for line in exported.stdout.splitlines()]
    types = [e["type"] for e in stored]
    assert types[0] == "session_started" and "tool_call" in types, "what was shown is stored"
    assert types[-2:] == ["turn_completed", "session_ended"]
    assert stored[-1]["reason"] == "cancelled"
    shown = invoke(["sessions", "show", session["id"]], home=monkey_home)
    assert "integrity  intact" in shown.stdout


def test_text_output_keeps_thinking_apart_and_shows_each_result_once(
    scripted, workspace: Path, monkey_home: Path
) -> None:
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["shell_execute"]\n')
    (workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(1, 21)))
    rows = f"{sys.executable} -c \"print('\\n'.join('row %d' % i for i in range(12)))\""
    run = scripted(
        [
            {
                "thinking": "I should look first.",
                "text": "Looking.",
                "tool_calls": [call("file_read", path="notes.txt"), call("shell_execute", command=rows)],
            },
            {"thinking": "Now write.", "tool_calls": [call("file_write", path="x.txt", content="x")]},
            {"thinking": "Denied, so I stop.", "text": "I could not write x.txt."},
        ],
        fmt="text",
    )
    lines = run.stdout.splitlines()
    assert "thinking: I should look first." in lines and "Looking." in lines, run.stdout
    assert "thinking: Denied, so I stop." in lines and "I could not write x.txt." in lines
    # a result shows several lines, then how many more there are
    assert "note 1" in run.stdout and "note 5" in run.stdout and "note 7" not in run.stdout
    assert any(line.strip() == "… 15 more lines" for line in lines), run.stdout
    # the shell's output streamed once, and its result adds only the exit code
    assert run.stdout.count("row 11") == 1 and run.stdout.count("row 0") == 1
    assert "  ✓ [exit code 0]" in lines
    # the denial is said once
    assert run.stdout.count("no terminal to ask on") == 1


def test_an_error_that_ends_the_task_is_said_once(workspace: Path, monkey_home: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on: the server is "offline"
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (monkey_home / "config.toml").write_text("[backend]\nmax_retries = 0\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "openai",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--api-key",
            "bad-key",
            "-m",
            "gpt-4o",
            "--cwd",
            str(workspace),
            "--task",
            "hello",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        env=monkey_env(monkey_home),
    )  # stdout and stderr together, as a terminal shows them
    assert proc.returncode == 1
    assert proc.stdout.count("All connection attempts failed") == 1, proc.stdout


def test_a_task_ends_naming_the_workspace_and_the_files_it_changed(scripted, workspace: Path) -> None:
    turns = [
        {
            "text": "Writing.",
            "tool_calls": [
                call("file_write", path="hello.py", content="print('hi')\n"),
                call("shell_execute", command="touch made.txt"),
                call("file_write", path="../outside.txt", content="no"),
                call("file_write", path="README.md", content="# proj\n"),
            ],
        },
        {"text": "Done."},
    ]
    run = scripted(turns, "--no-approval", fmt="text")
    assert run.returncode == 0, run.stderr
    # README.md was written with what it had: no change; the outside path was refused
    assert run.stderr.splitlines()[-1] == f"monkey: worked in {workspace}; changed hello.py, made.txt"
    assert "worked in" not in run.stdout
    again = scripted([{"text": "Nothing to do."}], fmt="json")
    (result,) = again.events
    assert result["workspace"] == str(workspace) and result["changed"] == []
    assert again.stderr == ""
