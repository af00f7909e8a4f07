"""Codex's approval requests answered by monkey's gate, with the real ``codex app-server``'s recorded
JSON-RPC streams (record_codex_app.py) replayed by a real fake ``codex`` process
(tests/external/fake_agent.py): what monkey sends back for an allowed file change, a command refused
headless, a file change into ``.git/hooks`` refused despite an allow rule, a request monkey does not
know, and a turn cancelled while the question waits for a person."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.backends.codex.backend import CodexBackend
from monkey.events import ApprovalRequested
from tests.support.cli import Run
from tests.support.external import FIXTURES, Waits, cancel_when_asked, configure, decisions, run_task, sent


def _run(
    home: Path, workspace: Path, codex: Path, fixture: str, log: Path, task: str, allow: tuple[str, ...] | None = None
) -> Run:
    configure(
        home,
        "codex",
        codex,
        allow=allow,
        FAKE_LOG=str(log),
        FAKE_VERSION="codex-cli 0.169.0",
        FAKE_REPLAY=str(FIXTURES / "codex" / f"{fixture}.jsonl"),
    )
    return run_task(home, workspace, "codex", task)


def test_opening_requests_and_an_allowed_file_change(
    monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    run = _run(monkey_home, workspace, fake_codex, "app_patch", log, "please patch notes.txt", allow=("file_write",))
    assert run.returncode == 0, run.stderr
    first = json.loads(log.read_text().splitlines()[0])
    assert first["argv"] == ["app-server"] and "OPENAI_API_KEY" not in first["env"]
    methods = [m.get("method") for m in sent(log)]
    assert methods[:4] == ["initialize", "initialized", "thread/start", "turn/start"]
    start = sent(log)[2]["params"]
    assert start["approvalPolicy"] == "untrusted" and start["sandbox"] == "workspace-write"
    assert start["cwd"] == str(workspace)
    assert sent(log)[3]["params"]["input"] == [{"type": "text", "text": "please patch notes.txt"}]
    assert decisions(log) == ["accept"]
    (asked,) = run.of_type("approval_resolved")  # the paths came from the item's item/started
    assert asked["name"] == "file_write" and asked["by"] == "rule" and asked["decision"] == "approved"
    kinds = [e["type"] for e in run.events]
    assert kinds.index("tool_call") < kinds.index("approval_resolved") < kinds.index("tool_result")
    per_call = [c for c in run.of_type("checkpoint_created") if c["tool"] == "fileChange"]
    assert per_call and per_call[0]["paths"] == ["notes.txt"]
    assert run.of_type("turn_completed")[0]["result"] == "Patched."


def test_recorded_command_is_refused_headless_and_codex_goes_on(
    monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    run = _run(monkey_home, workspace, fake_codex, "app_declined", log, "please create hello.txt")
    assert run.returncode == 0, run.stderr
    assert decisions(log) == ["decline"]
    (asked,) = run.of_type("approval_requested")  # the script inside Codex's bash -lc is what is judged
    assert asked["name"] == "shell_execute"
    assert asked["arguments"]["command"] == "printf 'hi there\\n' > hello.txt && echo wrote hello.txt"
    (resolved,) = run.of_type("approval_resolved")
    assert resolved["decision"] == "denied" and "no terminal to ask on" in resolved["reason"]
    (result,) = run.of_type("tool_result")
    assert not result["ok"] and result["output"].startswith("declined")
    assert run.of_type("turn_completed")[0]["reason"] == "completed"


def test_a_hook_file_is_refused_despite_an_allow_rule(
    monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    run = _run(monkey_home, workspace, fake_codex, "app_hook", log, "please patch a hook", allow=("file_write",))
    assert run.returncode == 0, run.stderr
    assert decisions(log) == ["decline"]
    (asked,) = run.of_type("approval_requested")
    assert asked["arguments"]["path"] == ".git/hooks/pre-commit"
    assert any("only this call can be approved" in w for w in asked["warnings"])
    assert run.of_type("approval_resolved")[0]["decision"] == "denied"
    assert not [c for c in run.of_type("checkpoint_created") if c["tool"] == "fileChange"]


def test_a_request_monkey_does_not_know_gets_an_error(
    monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never silence: a question monkey cannot answer gets a JSON-RPC error, and the turn goes on."""
    lines = (FIXTURES / "codex" / "app_text.jsonl").read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if '"turn/started"' in line) + 1
    ask = {
        "method": "item/tool/requestUserInput",
        "id": 0,
        "params": {"threadId": "t", "turnId": "u", "itemId": "x", "questions": []},
    }
    lines.insert(at, json.dumps(ask))
    fixture = tmp_path / "fixtures" / "codex"
    fixture.mkdir(parents=True)
    (fixture / "asks.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr("tests.external.test_codex_gate.FIXTURES", tmp_path / "fixtures")
    log = tmp_path / "log.jsonl"
    run = _run(monkey_home, workspace, fake_codex, "asks", log, "say hello")
    assert run.returncode == 0, run.stderr
    (error,) = [m for m in sent(log) if "error" in m]
    assert error["id"] == 0 and "item/tool/requestUserInput" in error["error"]["message"]
    assert run.of_type("turn_completed")[0]["result"].startswith("Hello from the fake server")


@pytest.mark.subprocess
def test_cancel_while_the_question_is_pending_answers_codex(workspace: Path, fake_codex: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    env = {"FAKE_REPLAY": str(FIXTURES / "codex" / "app_cancel.jsonl"), "FAKE_LOG": str(log)}
    backend = CodexBackend(
        executable=str(fake_codex),
        model=None,
        workspace=workspace,
        env=env,
        base_env={"PATH": os.environ["PATH"]},
        grace=1.0,
        check_version=False,
    )
    approver = Waits()
    agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())
    events = cancel_when_asked(agent, approver, "please sleep a while")
    assert any(isinstance(e, ApprovalRequested) for e in events)
    assert events[-1].type == "turn_completed" and events[-1].reason == "cancelled"
    # Codex got its answer before it was stopped: it never hangs. What monkey wrote is asserted, not what
    # the fake logged: the stop (SIGTERM) follows the write at once, and on a loaded machine the fake can
    # die before it reads a line that is already in its pipe
    assert [json.loads(line)["result"]["decision"] for line in backend.answered if b'"result"' in line] == ["cancel"]
    assert backend.last is not None and backend.last.returncode is not None
