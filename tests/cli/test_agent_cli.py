"""``monkey agent --task`` as a person runs it: a real subprocess in a real git repository,
driven by the scripted backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import invoke, monkey_env, run_monkey, write_script
from tests.support.procs import pids_running
from tests.support.script import call


def test_version_is_fast_path(monkey_home: Path) -> None:
    run = run_monkey(["--version"], home=monkey_home)
    assert run.returncode == 0
    assert run.stdout.startswith("monkey ")


def test_write_file_stream_json(scripted, workspace: Path) -> None:
    run = scripted(
        [
            {
                "text": "Creating hello.py now.",
                "tool_calls": [call("file_write", path="hello.py", content="print('hi')\n")],
            },
            {"text": "Created hello.py."},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.py").read_text() == "print('hi')\n"
    types = [e["type"] for e in run.events]
    assert types[0] == "session_started" and types[-1] == "session_ended"
    for expected in (
        "turn_started",
        "iteration_started",
        "text_delta",
        "message_completed",
        "tool_call",
        "approval_resolved",
        "tool_started",
        "tool_result",
        "usage",
        "turn_completed",
    ):
        assert expected in types, expected
    assert len(run.of_type("text_delta")) > 1, "text streams as several deltas"
    result = run.of_type("tool_result")[0]
    assert result["ok"] and "+print('hi')" in result["diff"]
    assert run.of_type("session_ended")[0]["reason"] == "completed"
    assert {e["session_id"] for e in run.events} == {run.events[0]["session_id"]}
    assert all(isinstance(e["ts"], float) for e in run.events)


def test_edit_and_delete(scripted, workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\ny = 2\n")
    (workspace / "old.txt").write_text("bye\n")
    run = scripted(
        [
            {"tool_calls": [call("file_edit", path="app.py", old_string="y = 2", new_string="y = 3")]},
            {"tool_calls": [call("file_delete", path="old.txt")]},
            {"text": "done"},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    assert (workspace / "app.py").read_text() == "x = 1\ny = 3\n"
    assert not (workspace / "old.txt").exists()
    assert [r["ok"] for r in run.of_type("tool_result")] == [True, True]


def test_edit_errors_go_back_to_the_model(scripted, workspace: Path) -> None:
    (workspace / "app.py").write_text("a = 1\na = 1\n")
    run = scripted(
        [
            {"tool_calls": [call("file_edit", path="app.py", old_string="a = 1", new_string="b")]},
            {"tool_calls": [call("file_edit", path="app.py", old_string="zzz", new_string="b")]},
            {"text": "I could not edit it."},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    first, second = run.of_type("tool_result")
    assert not first["ok"] and "2" in first["output"]
    assert not second["ok"] and "not found" in second["output"]
    assert (workspace / "app.py").read_text() == "a = 1\na = 1\n"
    assert run.of_type("turn_completed")[0]["result"] == "I could not edit it."


def test_shell_streams_output(scripted, workspace: Path) -> None:
    cmd = f"{sys.executable} -c \"print('forty'); print('two')\""
    run = scripted([{"tool_calls": [call("shell_execute", command=cmd)]}, {"text": "ok"}], "--no-approval")
    assert run.returncode == 0, run.stderr
    streamed = "".join(e["text"] for e in run.of_type("tool_output"))
    assert "forty" in streamed and "two" in streamed
    assert run.of_type("tool_result")[0]["ok"]


def test_headless_denies_without_rule(scripted, workspace: Path) -> None:
    run = scripted(
        [{"tool_calls": [call("file_write", path="x.txt", content="x")]}, {"text": "I was not allowed."}],
    )
    assert run.returncode == 4
    assert not (workspace / "x.txt").exists()
    resolved = run.of_type("approval_resolved")[0]
    assert resolved["decision"] == "denied" and resolved["by"] == "policy"
    assert "no terminal" in run.of_type("tool_result")[0]["output"]
    assert run.of_type("session_ended")[0]["reason"] == "denied"
    assert "denied" in run.stderr and run.stderr.count("\n") == 1


def test_config_rules_allow_and_deny(scripted, workspace: Path, monkey_home: Path) -> None:
    (monkey_home / "config.toml").write_text(
        '[approvals]\nallow = ["file_write(notes/*)", "shell_execute(git status)"]\n'
    )
    run = scripted(
        [
            {"tool_calls": [call("file_write", path="notes/a.md", content="a")]},
            {"tool_calls": [call("file_write", path="src/b.py", content="b")]},
            {"tool_calls": [call("shell_execute", command="git status --short")]},
            {"tool_calls": [call("shell_execute", command="git status; touch pwned")]},
            {"text": "done"},
        ],
    )
    results = run.of_type("tool_result")
    assert [r["ok"] for r in results] == [True, False, True, False]
    assert (workspace / "notes/a.md").exists()
    assert not (workspace / "src/b.py").exists()
    assert not (workspace / "pwned").exists()
    assert run.returncode == 4


def test_project_config_cannot_grant_approvals(scripted, workspace: Path) -> None:
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey/config.toml").write_text('[approvals]\nallow = ["file_write"]\n')
    run = scripted([{"tool_calls": [call("file_write", path="x.txt", content="x")]}, {"text": "no"}])
    assert run.returncode == 4
    assert not (workspace / "x.txt").exists()
    assert "the settings approvals.allow of .monkey/config.toml" in run.stderr and "not trusted" in run.stderr


def test_path_escapes_are_refused(scripted, workspace: Path, tmp_path: Path) -> None:
    sibling = tmp_path / "proj-evil"
    sibling.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    run = scripted(
        [
            {"tool_calls": [call("file_write", path="../escape.txt", content="x")]},
            {"tool_calls": [call("file_write", path=str(tmp_path / "abs.txt"), content="x")]},
            {"tool_calls": [call("file_write", path="link/through.txt", content="x")]},
            {"tool_calls": [call("file_write", path=str(sibling / "s.txt"), content="x")]},
            {"tool_calls": [call("file_write", path=".git/config", content="x")]},
            {"tool_calls": [call("file_read", path="/etc/passwd")]},
            {"text": "none of that worked"},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    results = run.of_type("tool_result")
    assert len(results) == 6 and not any(r["ok"] for r in results)
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "abs.txt").exists()
    assert not (outside / "through.txt").exists()
    assert not (sibling / "s.txt").exists()
    assert "root:" not in run.stdout


def test_repeated_call_stops(scripted, workspace: Path) -> None:
    run = scripted([{"tool_calls": [call("file_read", path="README.md")], "repeat": 5}, {"text": "never"}])
    assert run.returncode == 1
    assert len(run.of_type("tool_result")) == 2
    ended = run.of_type("session_ended")[0]
    assert ended["reason"] == "error" and "same call 3 times" in ended["message"]
    assert "same call 3 times" in run.stderr


def test_alternating_calls_stop_like_a_repeated_call(scripted, workspace: Path) -> None:
    a, b = call("file_read", path="README.md"), call("file_read", path="README.md", offset=2)
    run = scripted([*[{"tool_calls": [c]} for c in (a, b) * 4], {"text": "never"}])
    assert run.returncode == 1
    assert len(run.of_type("tool_result")) == 5  # the sixth call, closing the third A, B, is not run
    ended = run.of_type("session_ended")[0]
    assert ended["reason"] == "error" and "the same 2 calls in turn 3 times" in ended["message"]


def test_max_iterations(scripted, workspace: Path) -> None:
    turns = [{"tool_calls": [call("file_read", path="README.md", offset=i + 1)]} for i in range(5)]
    run = scripted(turns, "--max-iterations", "2")
    assert run.returncode == 3
    assert run.of_type("session_ended")[0]["reason"] == "max_iterations"
    assert len(run.of_type("iteration_started")) == 2


def test_unknown_tool_and_bad_arguments_are_recoverable(scripted) -> None:
    run = scripted(
        [
            {"tool_calls": [call("launch_rockets", target="moon")]},
            {"tool_calls": [call("file_read", path=42)]},
            {"tool_calls": [call("file_read", path="README.md", colour="blue")]},
            {"text": "recovered"},
        ]
    )
    assert run.returncode == 0, run.stderr
    outputs = [r["output"] for r in run.of_type("tool_result")]
    assert "unknown tool" in outputs[0] and "file_read" in outputs[0]
    assert "invalid arguments" in outputs[1]
    assert "invalid arguments" in outputs[2]


def test_json_output(scripted) -> None:
    run = scripted([{"text": "All good.", "usage": {"input_tokens": 10, "output_tokens": 3}}], fmt="json")
    assert run.returncode == 0, run.stderr
    obj = json.loads(run.stdout)
    assert obj["result"] == "All good." and obj["reason"] == "completed" and not obj["is_error"]
    assert obj["usage"]["input_tokens"] == 10 and obj["usage"]["output_tokens"] == 3
    assert obj["session_id"].startswith("s") and obj["events"] > 3


def test_text_output_is_readable_and_inert(scripted, workspace: Path) -> None:
    run = scripted(
        [
            {"tool_calls": [call("file_write", path="a.txt", content="one\n")]},
            {"text": "Done \x1b]52;c;ZXZpbA==\x07 and \x1b[2J cleared."},
        ],
        "--no-approval",
        fmt="text",
    )
    assert run.returncode == 0, run.stderr
    assert "● file_write a.txt" in run.stdout
    assert "+one" in run.stdout
    assert "\x1b" not in run.stdout and "\\x1b]52" in run.stdout


def test_script_exhausted_and_bad_script(scripted, monkey_home: Path, tmp_path: Path, workspace: Path) -> None:
    run = scripted([{"tool_calls": [call("file_read", path="README.md")]}])
    assert run.returncode == 1
    assert "no more turns" in run.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    run = invoke(
        ["agent", "--backend", "scripted", "--script", str(bad), "--task", "x", "--cwd", str(workspace)],
        home=monkey_home,
    )
    assert run.returncode == 2 and "bad script" in run.stderr


def test_bad_flags_and_config(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    run = invoke(["agent", "--task", "x", "--cwd", str(tmp_path / "nope")], home=monkey_home)
    assert run.returncode == 2 and "not a directory" in run.stderr
    run = invoke(["agent", "--task", "x", "--max-iterations", "0"], home=monkey_home)
    assert run.returncode == 2
    (monkey_home / "config.toml").write_text("[agent]\nmax_iterations = 'many'\n")
    run = invoke(["agent", "--task", "x", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 2 and "config.toml" in run.stderr
    (monkey_home / "config.toml").unlink()
    run = invoke(
        ["agent", "--backend", "codex", "--task", "x", "--cwd", str(workspace)], home=monkey_home, PATH="/nonexistent"
    )
    assert run.returncode == 2 and "Codex not found" in run.stderr
    run = invoke(
        ["agent", "--backend", "anthropic", "--task", "x", "--cwd", str(workspace)],
        home=monkey_home,
        ANTHROPIC_API_KEY="",
    )
    assert run.returncode == 1 and "no Anthropic API key" in run.stderr


def test_task_from_stdin(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hello from stdin"}])
    run = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)],
        home=monkey_home,
        input="say hello\n",
    )
    assert run.returncode == 0, run.stderr
    assert "hello from stdin" in run.stdout


@pytest.mark.subprocess
def test_ctrl_c_cancels_cleanly_and_kills_children(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    marker = f"monkey-ctrl-c-{os.getpid()}"
    code = f"import time; open('child.started','w').write('{marker}'); time.sleep(60)"
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [call("shell_execute", command=f'{sys.executable} -c "{code}"', timeout=120)]}, {"text": "x"}],
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
            "--task",
            "sleep",
            "--no-approval",
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(monkey_home),
    )
    started = workspace / "child.started"
    deadline = time.monotonic() + 30
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    children = pids_running(marker)
    assert children, "the child is not running"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "cancelled"
    deadline = time.monotonic() + 30
    while pids_running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pids_running(marker), "the shell child outlived the cancelled turn"


def test_a_deny_rule_protects_a_read_however_the_model_spells_the_path(
    scripted, workspace: Path, monkey_home: Path
) -> None:
    (workspace / ".env").write_text("API_KEY=sk-do-not-leak\n")
    (workspace / "sub").mkdir()
    (workspace / "link").symlink_to(workspace / ".env")
    (monkey_home / "config.toml").write_text('[approvals]\ndeny = ["file_read(.env)"]\n')
    run = scripted(
        [
            {
                "text": "",
                "tool_calls": [
                    call("file_read", path="sub/../.env"),
                    call("file_read", path="link"),
                    call("file_read", path=str(workspace / ".env")),
                ],
            },
            {"text": "I could not read it."},
        ],
        "--no-approval",
    )
    assert run.returncode == 4, run.stderr  # every read was denied by a rule: the task could not do it
    assert "sk-do-not-leak" not in run.stdout
    assert [r["ok"] for r in run.of_type("tool_result")] == [False, False, False]


def test_a_line_front_end_collects_again_before_its_session(workspace: Path, tmp_path: Path) -> None:
    """``monkey agent`` holds the garbage collector while it starts; only the app keeps it held
    until its first frame: ``--task`` (and ``--plain``) let it go before the session starts."""
    import gc

    from monkey.cli import build_parser
    from monkey.commands.agent import run_agent_command
    from monkey.ui.memory import hold_collector

    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    args = build_parser(only="agent").parse_args(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "hi"]
    )
    hold_collector()
    try:
        assert run_agent_command(args) == 0
        assert gc.isenabled()
    finally:
        gc.enable()
