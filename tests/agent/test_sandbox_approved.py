"""A command a person approves still runs in the sandbox; only when the sandbox blocked it is the
person asked, a second time, whether to run it again outside. A line the person typed (``!command``)
runs outside. Real bubblewrap, real files, the scripted backend playing the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.scripted import ScriptCall, ScriptTurn
from monkey.checkpoints.guard import CheckpointGuard
from monkey.events import Event, ToolResult
from monkey.permissions.requests import ApprovalRequest, Approver, Decision, HeadlessApprover
from monkey.tools.base import ShellSettings
from monkey.tools.sandbox import bubblewrap_problem, probe
from tests.support.agent import agent_for

pytestmark = pytest.mark.skipif(bool(bubblewrap_problem()), reason=bubblewrap_problem() or "bubblewrap")


class Person:
    """Answers the first question with yes and the second with ``second`` (another approver)."""

    def __init__(self, second: Approver) -> None:
        self.second = second
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        if len(self.requests) == 1:
            return Decision(approved=True)
        return await self.second.decide(request)


class Answer:
    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    async def decide(self, request: ApprovalRequest) -> Decision:
        return self.decision


def sandboxed_agent(workspace: Path, home: Path, command: str, approver: Approver) -> Agent:
    sandbox = probe("bubblewrap").sandbox
    assert sandbox is not None
    calls = [ScriptCall(name="shell_execute", arguments={"command": command, "timeout": 60})]
    return agent_for(
        workspace,
        [ScriptTurn(tool_calls=calls), ScriptTurn(text="ok")],
        approver=approver,
        options=AgentOptions(shell=ShellSettings(sandbox=sandbox)),
        checkpoints=CheckpointGuard(workspace, home=home),
    )


def writes(path: Path) -> str:
    return f"{sys.executable} -c {json.dumps(f'open({str(path)!r}, {chr(39)}w{chr(39)}).write({chr(39)}out{chr(39)})')}"


async def run(agent: Agent) -> list[Event]:
    return [event async for event in agent.run_task("go")]


def result(events: list[Event]) -> ToolResult:
    [found] = [e for e in events if isinstance(e, ToolResult)]
    return found


async def test_an_approved_command_runs_in_the_sandbox_and_is_rerun_outside_only_when_asked_again(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    person = Person(Answer(Decision(approved=True)))
    events = await run(sandboxed_agent(workspace, monkey_home, writes(target), person))
    assert len(person.requests) == 2, "the approved run was blocked, so the person was asked again"
    first, second = person.requests
    assert not first.unsandboxed and second.unsandboxed
    assert second.grant == "" and second.rules == []  # once, never for the session or for good
    [blocked] = [w for w in second.warnings if w.startswith("the sandbox blocked it: ")]
    assert str(target) in blocked and "outside the workspace" in blocked and "\n" not in blocked
    assert not blocked.removeprefix("the sandbox blocked it: ").startswith("[")
    assert any("OUTSIDE the sandbox" in w for w in second.warnings)
    assert target.read_text() == "out"  # the rerun the person approved ran outside
    done = result(events)
    assert done.ok and "a person approved running it outside" in done.output
    resolved = [e for e in events if e.type == "approval_resolved"]
    assert [r.decision for r in resolved] == ["approved", "approved"]


async def test_refused_or_with_nobody_to_ask_it_is_not_rerun_and_the_model_is_told(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    no = Person(Answer(Decision(approved=False, reason="keep it in")))
    events = await run(sandboxed_agent(workspace, monkey_home, writes(target), no))
    assert not target.exists()
    said = result(events)
    assert not said.ok and "[not run outside the sandbox: keep it in]" in said.output
    assert "Read-only file system" in said.output  # what the sandbox refused, from the first run

    headless = Person(HeadlessApprover())
    events = await run(sandboxed_agent(workspace, monkey_home, writes(target), headless))
    assert not target.exists() and len(headless.requests) == 2
    said = result(events)
    assert not said.ok and "not run outside the sandbox" in said.output and "no terminal to ask on" in said.output


async def test_an_approved_command_has_no_network(workspace: Path, monkey_home: Path) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('CONNECTED')"
    person = Person(Answer(Decision(approved=False, reason="no")))
    try:
        events = await run(sandboxed_agent(workspace, monkey_home, f"{sys.executable} -c {json.dumps(code)}", person))
    finally:
        server.close()
    said = result(events)
    assert "CONNECTED" not in said.output and "without network access" in said.output
    assert len(person.requests) == 2 and person.requests[1].unsandboxed


async def test_a_line_the_person_typed_runs_outside(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "typed.txt"
    person = Person(Answer(Decision(approved=False)))
    agent = sandboxed_agent(workspace, monkey_home, "true", person)
    events = [event async for event in agent.run_shell(writes(target))]
    assert result(events).ok and target.read_text() == "out"
    assert person.requests == []
