"""Logging as a person sets it up: quiet by default, -v lines on stderr, a JSON-lines file with
each record's fields, a handler by import path; bad setups are one clear line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import ROOT, init_git_workspace, run_monkey, write_script

TURNS = [
    {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}]},
    {"text": "done"},
]


def _run(ws: Path, home: Path, tmp: Path, *flags: str, **env: str):  # type: ignore[no-untyped-def]
    script = write_script(tmp / "script.json", TURNS)
    return run_monkey(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--no-approval",
            *flags,
            "--task",
            "write a",
        ],
        home=home,
        **env,
    )


def test_quiet_by_default_and_v_lines_on_stderr(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    quiet = _run(ws, monkey_home, tmp_path)
    assert quiet.returncode == 0 and " INFO " not in quiet.stderr
    loud = _run(ws, monkey_home, tmp_path, "-v")
    assert loud.returncode == 0, loud.stderr
    lines = [line for line in loud.stderr.splitlines() if " INFO monkey.events: " in line]
    assert any("tool result" in line and "tool=file_write" in line and "ok=True" in line for line in lines), lines
    assert not any(" DEBUG " in line for line in loud.stderr.splitlines()), "-v is INFO; -vv adds DEBUG"
    assert "\x1b[" not in loud.stderr, "no colours when stderr is not a terminal"
    very = _run(ws, monkey_home, tmp_path, "-vv")
    assert " DEBUG monkey.events: iteration started" in very.stderr


def test_a_json_lines_file_with_each_records_fields(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "logs" / "monkey.jsonl"
    run = _run(ws, monkey_home, tmp_path, "--log-file", str(log))
    assert run.returncode == 0, run.stderr
    assert " INFO " not in run.stderr, "the file, not stderr"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    result = next(r for r in records if r["message"] == "tool result")
    assert result["level"] == "info" and result["logger"] == "monkey.events" and result["tool"] == "file_write"
    assert result["ok"] is True and result["session_id"].startswith("s") and result["call_id"]
    assert {r["message"] for r in records} >= {
        "session started",
        "turn started",
        "checkpoint created",
        "turn completed",
        "iteration started",
    }
    # [logging] file in the user's config does the same; a project's config may not
    (monkey_home / "config.toml").write_text(f"[logging]\nfile = {json.dumps(str(tmp_path / 'mine.jsonl'))}\n")
    (ws / ".monkey").mkdir()
    (ws / ".monkey" / "config.toml").write_text(f"[logging]\nfile = {json.dumps(str(tmp_path / 'theirs.jsonl'))}\n")
    run = _run(ws, monkey_home, tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "mine.jsonl").stat().st_size > 0 and not (tmp_path / "theirs.jsonl").exists()


def test_a_handler_by_import_path_and_bad_setups(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    sink = tmp_path / "sink.txt"
    (monkey_home / "config.toml").write_text('[logging]\nhandlers = ["tests.fixtures.log_handler:make"]\n')
    run = _run(ws, monkey_home, tmp_path, MONKEY_TEST_LOG_SINK=str(sink), PYTHONPATH=str(ROOT))
    assert run.returncode == 0, run.stderr
    assert any(line.startswith("tool result s") for line in sink.read_text().splitlines())
    (monkey_home / "config.toml").write_text('[logging]\nhandlers = ["tests.fixtures.log_handler:not_a_handler"]\n')
    bad = _run(ws, monkey_home, tmp_path)
    assert bad.returncode == 2 and "returned int, not a logging.Handler" in bad.stderr and "Traceback" not in bad.stderr
    (monkey_home / "config.toml").write_text('[logging]\nhandlers = ["no_such_module:make"]\n')
    assert "could not be made: ModuleNotFoundError" in _run(ws, monkey_home, tmp_path).stderr
    (monkey_home / "config.toml").write_text("")
    (ws / "a.txt").unlink()
    unwritable = _run(ws, monkey_home, tmp_path, "--log-file", "/proc/monkey-cannot/log.jsonl")
    assert unwritable.returncode == 2 and "cannot write the log file" in unwritable.stderr
    assert not (ws / "a.txt").exists(), "nothing ran"
