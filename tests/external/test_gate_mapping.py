"""Claude Code's tool calls in monkey's vocabulary, and the gate's decisions on the shapes the
recordings do not cover (MultiEdit, a notebook, a tool monkey has no name for, a read a deny rule
covers), decided by a real agent's engine with the headless approver."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.permissions.external_gate import ExternalGate
from monkey.backends.claude_code.tools import gate_call
from monkey.backends.scripted import Script, ScriptedBackend
from monkey.events import ApprovalRequested, ApprovalResolved, Event


def test_claude_tools_in_monkeys_words(workspace: Path) -> None:
    ws = str(workspace)
    bash = gate_call({"tool_name": "Bash", "input": {"command": "ls -la"}, "tool_use_id": "t1"}, workspace)
    assert (bash.tool, bash.arguments, bash.call_id) == ("shell_execute", {"command": "ls -la"}, "t1")
    edit = gate_call(
        {"tool_name": "Edit", "input": {"file_path": f"{ws}/a/b.py", "old_string": "x", "new_string": "y"}}, workspace
    )
    assert edit.tool == "file_edit" and edit.arguments["path"] == "a/b.py" and edit.arguments["new_string"] == "y"
    multi = gate_call({"tool_name": "MultiEdit", "input": {"file_path": f"{ws}/c.py", "edits": []}}, workspace)
    assert (multi.tool, multi.arguments) == ("file_edit", {"path": "c.py"})
    notebook = gate_call({"tool_name": "NotebookEdit", "input": {"notebook_path": f"{ws}/n.ipynb"}}, workspace)
    assert (notebook.tool, notebook.arguments) == ("file_edit", {"path": "n.ipynb"})
    outside = gate_call({"tool_name": "Write", "input": {"file_path": "/etc/passwd", "content": ""}}, workspace)
    assert outside.arguments["path"] == "/etc/passwd"
    read = gate_call({"tool_name": "Grep", "input": {"pattern": "TODO", "path": ws}}, workspace)
    assert read.tool == "grep_search" and read.arguments == {"path": ".", "pattern": "TODO"}
    other = gate_call({"tool_name": "WebFetch", "input": {"url": "https://x"}}, workspace)
    assert (other.tool, other.arguments) == ("WebFetch", {"url": "https://x"})


def _decide(workspace: Path, policy: ApprovalPolicy, request: dict) -> tuple[bool, str, list[Event]]:
    agent = Agent(backend=ScriptedBackend(Script(turns=[])), workspace=workspace, policy=policy)
    events: list[Event] = []

    async def go():  # type: ignore[no-untyped-def]
        gate = ExternalGate(agent.calls(), turn=1, emit=events.append, checkpoints=False)
        return await gate.decide(gate_call(request, workspace))

    answer = asyncio.run(go())
    return answer.allow, answer.message, events


def test_the_gate_decides_what_no_recording_shows(workspace: Path) -> None:
    ws = str(workspace)
    # a tool monkey has no name for asks (headless: refused); a rule may name it by Claude Code's name
    allow, why, events = _decide(
        workspace, ApprovalPolicy(), {"tool_name": "WebFetch", "input": {"url": "https://x"}, "tool_use_id": "t1"}
    )
    assert not allow and "no terminal to ask on" in why
    assert [type(e) for e in events] == [ApprovalRequested, ApprovalResolved]
    allow, _, _ = _decide(
        workspace,
        ApprovalPolicy.from_strings(allow=["WebFetch"]),
        {"tool_name": "WebFetch", "input": {"url": "https://x"}, "tool_use_id": "t1"},
    )
    assert allow
    # MultiEdit: decided by its path as file_edit (accept-edits lets it run; plan refuses it)
    multi = {"tool_name": "MultiEdit", "input": {"file_path": f"{ws}/c.py", "edits": []}, "tool_use_id": "t2"}
    assert _decide(workspace, ApprovalPolicy.from_strings(mode="accept-edits"), multi)[0]
    allow, why, _ = _decide(workspace, ApprovalPolicy.from_strings(mode="plan"), multi)
    assert not allow and "plan mode" in why
    # a path monkey's own file tools refuse needs a person, even in auto mode
    hook = {"tool_name": "Write", "input": {"file_path": f"{ws}/.git/hooks/x", "content": "x"}, "tool_use_id": "t3"}
    allow, why, _ = _decide(workspace, ApprovalPolicy.from_strings(no_approval=True), hook)
    assert not allow and "exact call" in why
    # reads run, unless a deny rule covers them
    read = {"tool_name": "Read", "input": {"file_path": f"{ws}/.env"}, "tool_use_id": "t4"}
    assert _decide(workspace, ApprovalPolicy(), read)[0]
    allow, why, events = _decide(workspace, ApprovalPolicy.from_strings(deny=["file_read(.env)"]), read)
    assert not allow and "denied by rule file_read(.env)" in why and isinstance(events[-1], ApprovalResolved)
