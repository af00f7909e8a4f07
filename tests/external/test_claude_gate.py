"""Claude Code's permission prompts answered by monkey's gate, with the real CLI's recorded control
stream replayed by a real fake ``claude`` process (tests/external/fake_agent.py): what monkey
writes back on the CLI's stdin for an allowed call, a denied one, and a turn cancelled while the
question waits for a person."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.backends.claude_code.backend import ClaudeCodeBackend
from monkey.events import ApprovalRequested
from tests.support.cli import invoke
from tests.support.external import FIXTURES, Waits, answers, cancel_when_asked, configure, prepend_config, run_task


def test_recorded_write_is_allowed_by_a_rule(
    monkey_home: Path, workspace: Path, fake_agent: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    configure(
        monkey_home,
        "claude_code",
        fake_agent,
        allow=("file_write",),
        FAKE_LOG=str(log),
        FAKE_REPLAY=str(FIXTURES / "claude_code" / "real_write.jsonl"),
    )
    run = run_task(monkey_home, workspace, "claude-code", "please create hello.txt")
    assert run.returncode == 0, run.stderr
    (answer,) = answers(log)
    decision = answer["response"]["response"]
    assert answer["type"] == "control_response" and answer["response"]["subtype"] == "success"
    assert decision["behavior"] == "allow" and decision["updatedInput"]["content"] == "hi there\n"
    kinds = [e["type"] for e in run.events]
    assert kinds.index("tool_call") < kinds.index("approval_resolved") < kinds.index("tool_result")


def test_recorded_bash_is_refused_headless(
    monkey_home: Path, workspace: Path, fake_agent: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    configure(
        monkey_home,
        "claude_code",
        fake_agent,
        FAKE_LOG=str(log),
        FAKE_REPLAY=str(FIXTURES / "claude_code" / "real_bash_denied.jsonl"),
    )
    run = run_task(monkey_home, workspace, "claude-code", "please run the command")
    assert run.returncode == 0, run.stderr
    (answer,) = answers(log)
    decision = answer["response"]["response"]
    assert decision["behavior"] == "deny" and "no terminal to ask on" in decision["message"]
    (asked,) = run.of_type("approval_requested")
    assert asked["name"] == "shell_execute" and asked["arguments"]["command"] == "echo from-bash > bash.txt"
    assert run.of_type("approval_resolved")[0]["decision"] == "denied"


@pytest.mark.subprocess
def test_cancel_while_the_question_is_pending_answers_the_cli(
    workspace: Path, fake_agent: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    env = {"FAKE_REPLAY": str(FIXTURES / "claude_code" / "real_bash_denied.jsonl"), "FAKE_LOG": str(log)}
    backend = ClaudeCodeBackend(
        executable=str(fake_agent),
        model=None,
        workspace=workspace,
        env=env,
        base_env={"PATH": os.environ["PATH"]},
        grace=1.0,
    )
    approver = Waits()
    agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())
    events = cancel_when_asked(agent, approver, "please run the command")
    assert any(isinstance(e, ApprovalRequested) for e in events)
    assert events[-1].type == "turn_completed" and events[-1].reason == "cancelled"
    # the CLI got its answer before it was stopped: it never hangs on the question. What monkey wrote
    # is asserted, not what the fake logged: the stop (SIGTERM) follows the write at once, and on a
    # loaded machine the fake can die before it reads a line that is already in its pipe
    answer = json.loads(backend.answered[-1])
    decision = answer["response"]["response"]
    assert decision == {"behavior": "deny", "message": "the person stopped the turn", "interrupt": True}
    assert backend.last is not None and backend.last.returncode is not None


def test_a_mode_that_skips_monkey_is_refused(monkey_home: Path, workspace: Path, fake_agent: Path) -> None:
    for key, value in (("permission_mode", '"bypassPermissions"'), ("allowed_tools", '["Bash"]')):
        (monkey_home / "config.toml").write_text(f'[claude_code]\nexecutable = "{fake_agent}"\n{key} = {value}\n')
        run = invoke(["agent", "--backend", "claude-code", "--task", "hi", "--cwd", str(workspace)], home=monkey_home)
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and "without monkey's approval" in lines[0] and key in lines[0]


def test_a_pre_tool_use_hook_decides_claude_codes_calls_too(
    monkey_home: Path, workspace: Path, fake_agent: Path, tmp_path: Path
) -> None:
    """A rule allows the write, the person's PreToolUse hook refuses it: the CLI is told no, with
    the hook's reason; the hook saw the call in monkey's vocabulary."""
    log, seen = tmp_path / "log.jsonl", tmp_path / "seen.json"
    hook = tmp_path / "no-writes.sh"
    hook.write_text(f"#!/bin/sh\ncat > {seen}\necho 'no writes from Claude Code today' >&2\nexit 2\n")
    hook.chmod(0o755)
    configure(
        monkey_home,
        "claude_code",
        fake_agent,
        FAKE_LOG=str(log),
        FAKE_REPLAY=str(FIXTURES / "claude_code" / "real_write.jsonl"),
    )
    prepend_config(
        monkey_home,
        '[approvals]\nallow = ["file_write"]\n'  # the hook writes beside the workspace:
        '[shell]\ntrusted_commands = "outside"\n'  # the person trusts it outside the sandbox
        f'[[hooks.PreToolUse]]\nmatcher = "file_write"\nhooks = [{{ type = "command", command = "{hook}" }}]\n',
    )
    run = run_task(monkey_home, workspace, "claude-code", "please create hello.txt")
    (answer,) = answers(log)
    decision = answer["response"]["response"]
    assert decision["behavior"] == "deny" and "no writes from Claude Code today" in decision["message"], decision
    assert json.loads(seen.read_text())["tool_name"] == "file_write"
    assert [e["outcome"] for e in run.of_type("hook_ran")] == ["block"]
    assert not (workspace / "hello.txt").exists()
