"""``monkey agent --backend claude-code|codex`` end to end with a fake agent executable:
the run is checkpointed (``monkey undo`` removes what it wrote), its tool calls show, and
``--continue`` resumes the agent's own session."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import invoke
from tests.support.external import FIXTURES, configure, run_task, sent


def test_claude_code_run_is_undoable_and_resumed(
    monkey_home: Path, workspace: Path, fake_agent: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    configure(
        monkey_home,
        "claude_code",
        fake_agent,
        FAKE_MODE="write",
        FAKE_LOG=str(log),
        FAKE_REPLAY=str(FIXTURES / "claude_code" / "tool_write.jsonl"),
    )
    run = run_task(monkey_home, workspace, "claude-code", "create hello.txt")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hi there\n"
    kinds = [e["type"] for e in run.events]
    assert kinds.index("checkpoint_created") < kinds.index("agent_session") < kinds.index("tool_call")
    (call,) = run.of_type("tool_call")
    assert call["name"] == "Write" and run.of_type("tool_result")[0]["ok"]
    assert run.of_type("checkpoint_created")[0]["tool"] == "claude-code"
    (done,) = run.of_type("turn_completed")
    assert done["reason"] == "completed" and done["result"] == "Done: hello.txt is written."
    assert done["iterations"] == 1  # the loop did not run the Write call again

    undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "hello.txt").exists()
    assert "hello.txt" in json.loads(undo.stdout)["removed"]

    again = run_task(monkey_home, workspace, "claude-code", "and again", "--continue")
    assert again.returncode == 0, again.stderr
    argv = [json.loads(line)["argv"] for line in log.read_text().splitlines()]
    assert "--resume" not in argv[0]
    assert argv[1][argv[1].index("--resume") + 1] == "8f0c2a51-3d7e-4c1b-9a55-2f4e1d0b7c63"


def test_claude_code_api_error_and_crash(monkey_home: Path, workspace: Path, fake_agent: Path) -> None:
    configure(monkey_home, "claude_code", fake_agent, FAKE_REPLAY=str(FIXTURES / "claude_code" / "api_error.jsonl"))
    run = invoke(["agent", "--backend", "claude-code", "--task", "hi", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 1 and "api_error" in run.stderr
    configure(
        monkey_home,
        "claude_code",
        fake_agent,
        FAKE_MODE="crash",
        FAKE_REPLAY=str(FIXTURES / "claude_code" / "tool_write.jsonl"),
    )
    run = invoke(["agent", "--backend", "claude-code", "--task", "hi", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 1 and "without a result" in run.stderr and "status 3" in run.stderr


def test_codex_run_is_resumed(monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    configure(
        monkey_home,
        "codex",
        fake_codex,
        FAKE_VERSION="codex-cli 0.169.0",
        FAKE_LOG=str(log),
        FAKE_REPLAY=str(FIXTURES / "codex" / "app_text.jsonl"),
    )
    run = run_task(monkey_home, workspace, "codex", "say hello")
    assert run.returncode == 0, run.stderr
    assert run.of_type("turn_completed")[0]["result"] == "Hello from the fake server (user messages: 1)."
    thread = run.of_type("agent_session")[0]["agent_session_id"]
    again = run_task(monkey_home, workspace, "codex", "say hello again", "--continue")
    assert again.returncode == 0, again.stderr
    opened = [m for m in sent(log) if m.get("method") in ("thread/start", "thread/resume")]
    assert [m["method"] for m in opened] == ["thread/start", "thread/resume"]
    assert opened[1]["params"]["threadId"] == thread


def test_project_config_cannot_choose_the_executable(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text('[claude_code]\nexecutable = "/bin/evil"\n')
    run = invoke(
        ["agent", "--backend", "claude-code", "--task", "hi", "--cwd", str(workspace)],
        home=monkey_home,
        PATH="/nonexistent",
    )
    assert run.returncode == 2
    assert "Claude Code not found ('claude'" in run.stderr and "evil" not in run.stderr
