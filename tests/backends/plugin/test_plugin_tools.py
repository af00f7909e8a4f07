"""A plugin's tool calls go through monkey's own loop: rules, approvals, checkpoints, undo."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke
from tests.support.plugins import WRITE, results, task


def test_a_write_is_denied_headless_and_the_plugin_is_told(install, workspace: Path, monkey_home: Path):
    plugin = install("writer", [WRITE, {"text": "ok, I could not"}])
    run = task(workspace, monkey_home, "writer", "write notes")
    assert not (workspace / "notes.txt").exists()
    [resolved] = run.of_type("approval_resolved")
    assert resolved["decision"] == "denied" and resolved["name"] == "file_write"
    [sent] = results(plugin)
    assert sent["tool_id"] == "t1" and sent["is_error"] is True and sent["result"].startswith("denied")
    assert run.of_type("turn_completed")[0]["reason"] == "denied"
    assert [e["text"] for e in run.of_type("message_completed")] == ["", "ok, I could not"]


def test_a_write_allowed_by_a_rule_runs_checkpointed_and_undo_reverts_it(install, workspace: Path, monkey_home: Path):
    plugin = install("writer", [{"text": "Writing."}, WRITE, {"text": "Done."}])
    with (monkey_home / "config.toml").open("a") as fh:
        fh.write('\n[approvals]\nallow = ["file_write(notes.txt)"]\n')
    run = task(workspace, monkey_home, "writer", "write notes")
    assert run.returncode == 0, run.stderr
    assert (workspace / "notes.txt").read_text() == "from the plugin\n"
    [call] = run.of_type("tool_call")
    assert call["name"] == "file_write" and call["arguments"]["path"] == "notes.txt"
    [checkpoint] = run.of_type("checkpoint_created")
    assert checkpoint["call_id"] == call["call_id"] and checkpoint["paths"] == ["notes.txt"]
    [sent] = results(plugin)
    assert sent["is_error"] is False and "notes.txt" in sent["result"]
    texts = [e["text"] for e in run.of_type("message_completed")]
    assert texts == ["Writing.", "Done."]
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "notes.txt").exists()


def test_a_file_event_is_a_file_write_through_the_same_path(install, workspace: Path, monkey_home: Path):
    plugin = install(
        "filer",
        [
            {"notify": {"type": "file", "data": {"path": "src/validate.py", "content": "x = 1\n", "action": "write"}}},
            {"text": "Wrote it."},
        ],
    )
    with (monkey_home / "config.toml").open("a") as fh:
        fh.write('\n[approvals]\nallow = ["file_write"]\n')
    run = task(workspace, monkey_home, "filer", "make the file")
    assert run.returncode == 0, run.stderr
    assert (workspace / "src/validate.py").read_text() == "x = 1\n"
    [call] = run.of_type("tool_call")
    assert call["name"] == "file_write"
    assert run.of_type("checkpoint_created")[0]["paths"] == ["src/validate.py"]
    assert results(plugin) == []  # a file event gets no answer
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "src/validate.py").exists()


def test_a_file_event_without_a_rule_is_refused_headless(install, workspace: Path, monkey_home: Path):
    install("filer", [{"notify": {"type": "file", "data": {"path": "a.txt", "content": "no"}}}, {"text": "ok"}])
    run = task(workspace, monkey_home, "filer", "make the file")
    assert not (workspace / "a.txt").exists()
    assert run.of_type("approval_resolved")[0]["decision"] == "denied"


def test_a_failing_tool_sends_the_error_back(install, workspace: Path, monkey_home: Path):
    plugin = install(
        "reader",
        [
            {"tool_use": {"id": "r1", "name": "file_read", "input": {"path": "missing.txt"}}},
            {"tool_use": {"id": "r2", "name": "read_file", "input": {"path": "README.md"}}},
            {"tool_use": {"id": "r3", "name": "file_read", "input": {"path": "README.md"}}},
            {"text": "read"},
        ],
    )
    run = task(workspace, monkey_home, "reader", "read things")
    assert run.returncode == 0, run.stderr
    first, unknown, ok = results(plugin)
    assert first["tool_id"] == "r1" and first["is_error"] is True and "missing.txt" in first["result"]
    assert unknown["is_error"] is True and "unknown tool 'read_file'" in unknown["result"]
    assert ok["is_error"] is False and "# proj" in ok["result"]
    assert [r["ok"] for r in run.of_type("tool_result")] == [False, False, True]
