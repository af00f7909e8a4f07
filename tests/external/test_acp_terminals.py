"""``terminal/*`` of the ``acp:NAME`` backend with the fake ACP agent (a real process): the agent's command
runs as monkey's ``shell_execute`` through the one call pipeline (decided, checkpointed, journaled,
capped, credentials blanked), its output and exit status answered, refused when the engine refuses
it, not asked twice after an allowed permission request for exactly that line, killed on request or
when the turn ends (no process left), and its change undone with ``monkey undo``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey.agent.loop import Agent
from monkey.events import ApprovalRequested, ApprovalResolved, Event, TextDelta, ToolCallEvent, ToolResult
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import ApprovalRequest, Decision
from tests.support.acp_agents import acp_backend, fake_acp_exe, got, run_turns
from tests.support.cli import invoke, monkey_env
from tests.support.external import run_task

TOKEN = "sk-ant-" + "Q" * 30

TOOL = f"""import os, sys
from pathlib import Path
Path("ran.txt").write_text(os.environ.get("FAKE_VAR", "ran"))
print("out line")
print("token {TOKEN}")
sys.exit(int(sys.argv[1]))
"""

SLEEPER = """import os, sys, time
from pathlib import Path
print("started", flush=True)
Path("started.txt").write_text(str(os.getpid()))
time.sleep(120)
"""


def _text(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _said(events: list[Event]) -> dict:
    text = _text(events)
    return json.loads(text[text.index("{") :])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for good
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


class CountingApprover:
    """A person who approves every question once, counted."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return Decision(approved=True, by="user", scope="once")


def test_a_command_runs_through_the_pipeline_and_its_output_and_status_come_back(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "tool.py").write_text(TOOL)
    log = tmp_path / "log.jsonl"
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, log)
    agent = Agent(
        backend=backend, workspace=workspace, policy=ApprovalPolicy.from_strings(allow=["shell_execute(python3 *)"])
    )
    (events,) = run_turns(agent, "term python3 tool.py 3")
    said = _said(events)
    assert said["wait"] == {"exitCode": 3}
    out = said["output"]
    assert "out line" in out["output"] and TOKEN not in out["output"] and "[redacted]" in out["output"]
    assert out["exitStatus"] == {"exitCode": 3} and out["truncated"] is False
    assert said["after_release"] is True  # released: the terminal id is gone
    call = next(e for e in events if isinstance(e, ToolCallEvent) and e.name == "shell_execute")
    assert call.arguments == {"command": "python3 tool.py 3"}
    (resolved,) = [e for e in events if isinstance(e, ApprovalResolved)]
    assert resolved.call_id == call.call_id and resolved.by == "rule" and resolved.decision == "approved"
    (result,) = [e for e in events if isinstance(e, ToolResult) and e.call_id == call.call_id]
    assert not result.ok and "[exit code 3]" in result.output
    init = got(log)[0]["params"]
    assert init["clientCapabilities"]["terminal"] is True


def test_the_output_keeps_the_last_bytes_the_agent_asked_for(workspace: Path, tmp_path: Path) -> None:
    (workspace / "tool.py").write_text(TOOL)
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log", FAKE_LIMIT="12")
    agent = Agent(
        backend=backend, workspace=workspace, policy=ApprovalPolicy.from_strings(allow=["shell_execute(python3 *)"])
    )
    (events,) = run_turns(agent, "term python3 tool.py 0")
    out = _said(events)["output"]
    assert out["truncated"] is True and out["exitStatus"] == {"exitCode": 0}
    assert len(out["output"].encode()) <= 12 and out["output"].endswith("\n") and "out line" not in out["output"]


def test_a_command_the_engine_refuses_does_not_run(workspace: Path, tmp_path: Path) -> None:
    (workspace / "tool.py").write_text(TOOL)
    for policy in (
        ApprovalPolicy(),  # headless: nobody to ask
        ApprovalPolicy.from_strings(allow=["shell_execute"], deny=["shell_execute(python3 *)"]),
    ):
        backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
        (events,) = run_turns(Agent(backend=backend, workspace=workspace, policy=policy), "term python3 tool.py 0")
        assert _text(events).startswith("refused: denied"), _text(events)
        assert not (workspace / "ran.txt").exists()
        (resolved,) = [e for e in events if isinstance(e, ApprovalResolved)]
        assert resolved.name == "shell_execute" and resolved.decision == "denied"


def test_bad_terminal_requests_are_refused_and_variables_go_as_an_env_prefix(workspace: Path, tmp_path: Path) -> None:
    (workspace / "tool.py").write_text(TOOL)
    approver = CountingApprover()
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy(), approver=approver)
    (events,) = run_turns(agent, "termbad")
    said = _said(events)
    assert said["bogus"]["code"] == -32602  # no such terminal
    assert "runs commands in the workspace root" in said["outside"]["message"]
    assert said["env"]["result"] == {"exitCode": 0}
    # what was decided (and asked) is the whole line, the variable included
    assert [r.arguments for r in approver.asked] == [{"command": "env 'FAKE_VAR=set by the agent' python3 tool.py 0"}]
    assert (workspace / "ran.txt").read_text() == "set by the agent"


def test_a_command_allowed_when_the_agent_asked_is_not_asked_again(workspace: Path, tmp_path: Path) -> None:
    (workspace / "tool.py").write_text(TOOL)
    approver = CountingApprover()
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy(), approver=approver)
    (events,) = run_turns(agent, "askterm python3 tool.py 0")
    assert _text(events).startswith("permission: yes; ")
    assert _said(events)["wait"] == {"exitCode": 0} and (workspace / "ran.txt").exists()
    assert [r.arguments for r in approver.asked] == [{"command": "python3 tool.py 0"}]  # once, for the request
    assert len([e for e in events if isinstance(e, ApprovalRequested)]) == 1
    # a command nobody asked about in this turn is decided (and asked) on its own
    (workspace / "ran.txt").unlink()
    (events,) = run_turns(
        Agent(
            backend=acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log"),
            workspace=workspace,
            policy=ApprovalPolicy(),
            approver=approver,
        ),
        "term python3 tool.py 0",
    )
    assert len(approver.asked) == 2 and (workspace / "ran.txt").exists()


def test_kill_stops_the_command_and_the_turn_stops_what_is_left(workspace: Path, tmp_path: Path) -> None:
    (workspace / "sleeper.py").write_text(SLEEPER)
    policy = ApprovalPolicy.from_strings(allow=["shell_execute(python3 *)"])
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    (events,) = run_turns(Agent(backend=backend, workspace=workspace, policy=policy), "termkill python3 sleeper.py")
    said = _said(events)
    assert "started" in said["before"]["output"] and "exitStatus" not in said["before"]
    assert said["wait"] == {"signal": "SIGTERM"} and said["after"]["exitStatus"] == {"signal": "SIGTERM"}
    assert not _alive(int((workspace / "started.txt").read_text()))
    (result,) = [e for e in events if isinstance(e, ToolResult) and e.name == "shell_execute"]
    assert not result.ok and "killed" in result.output
    (workspace / "started.txt").unlink()
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    (events,) = run_turns(Agent(backend=backend, workspace=workspace, policy=policy), "termleft python3 sleeper.py")
    assert events[-1].type == "turn_completed"
    assert not _alive(int((workspace / "started.txt").read_text()))  # stopped with the turn


def test_a_commands_change_is_checkpointed_and_undone(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    exe = fake_acp_exe(tmp_path / "bin")
    (monkey_home / "config.toml").write_text(
        '[approvals]\nallow = ["shell_execute(touch *)"]\n'
        f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n"
        f"[acp_agents.fake.env]\nFAKE_LOG = {json.dumps(str(tmp_path / 'log'))}\n"
    )
    run = run_task(monkey_home, workspace, "acp:fake", "term touch made.txt")
    assert run.returncode == 0, run.stderr
    assert (workspace / "made.txt").exists()
    own = [c for c in run.of_type("checkpoint_created") if c["tool"] == "shell_execute"]
    assert len(own) == 1 and own[0]["call_id"].startswith("acp-term-")
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists()


def _within(condition, what: str, seconds: float = 50.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def _sleepers(workspace: Path) -> list[int]:
    """Live processes running sleeper.py in ``workspace`` (by /proc: the sandbox has a pid namespace of its own)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if (
            b"sleeper.py" in argv
            and argv[0] != b"/usr/bin/bwrap"
            and cwd == str(workspace.resolve())
            and _alive(int(name))
        ):
            found.append(int(name))
    return found


@pytest.mark.subprocess
def test_a_running_command_dies_with_monkey(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    (workspace / "sleeper.py").write_text(SLEEPER)
    exe = fake_acp_exe(tmp_path / "bin")
    (monkey_home / "config.toml").write_text(
        f'[approvals]\nallow = ["shell_execute(python3 *)"]\n[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n'
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "acp:fake",
            "--task",
            "termhold python3 sleeper.py",
            "--cwd",
            str(workspace),
        ],
        env=monkey_env(monkey_home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _within(lambda: (workspace / "started.txt").exists() and bool(_sleepers(workspace)), "the command started")
        proc.kill()  # monkey dies without cleaning up: the command goes with it
        proc.wait()
        _within(lambda: not _sleepers(workspace), "the command died with monkey")
    finally:
        if proc.poll() is None:
            proc.kill()
