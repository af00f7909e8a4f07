"""The agent loop in-process: approvals through an injected Approver, concurrency,
cancellation, history kept valid."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision
from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import Event
from tests.support.fakes.approvers import AnsweringApprover
from tests.support.agent import agent_for, collect


def write(path: str, content: str) -> ScriptCall:
    return ScriptCall(name="file_write", arguments={"path": path, "content": content})


async def test_user_approval_once_then_session(workspace: Path) -> None:
    approver = AnsweringApprover(
        Decision(approved=True, by="user"), Decision(approved=True, scope="session", by="user")
    )
    agent = agent_for(
        workspace,
        [
            ScriptTurn(tool_calls=[write("a.txt", "a")]),
            ScriptTurn(tool_calls=[write("b.txt", "b")]),
            ScriptTurn(tool_calls=[write("c.txt", "c")]),
            ScriptTurn(text="done"),
        ],
        approver=approver,
    )
    events = await collect(agent.run_task("write three files"))
    assert [p.name for p in sorted(workspace.glob("*.txt"))] == ["a.txt", "b.txt", "c.txt"]
    assert len(approver.requests) == 2, "the session grant answered the third call"
    assert "+a" in approver.requests[0].summary, "the person sees the diff"
    resolved = [e for e in events if e.type == "approval_resolved"]
    assert [(e.decision, e.by) for e in resolved] == [
        ("approved", "user"),
        ("approved_session", "user"),
        ("approved", "session"),
    ]
    assert events[-1].type == "session_ended" and events[-1].reason == "completed"


async def test_denial_with_reason_goes_to_model(workspace: Path) -> None:
    approver = AnsweringApprover(Decision(approved=False, by="user", reason="use b.txt instead"))
    agent = agent_for(
        workspace,
        [ScriptTurn(tool_calls=[write("a.txt", "a")]), ScriptTurn(text="ok, I will not")],
        approver=approver,
    )
    events = await collect(agent.run_task("x"))
    tool_msg = [m for m in agent.messages if m.role == "tool"][0]
    assert tool_msg.is_error and "use b.txt instead" in tool_msg.content
    assert events[-1].reason == "completed", "a person's steering is not a failure: the model finished"
    assert not (workspace / "a.txt").exists()


async def test_denial_without_reason_stops_the_turn(workspace: Path) -> None:
    approver = AnsweringApprover(Decision(approved=False, by="user", reason="stopped", stop=True))
    backend = ScriptedBackend(
        Script(
            turns=[
                ScriptTurn(tool_calls=[write("a.txt", "a"), write("b.txt", "b")]),
                ScriptTurn(text="never reached"),
            ]
        )
    )
    agent = Agent(backend=backend, workspace=workspace, approver=approver)
    events = await collect(agent.run_task("x"))
    assert backend.calls == 1
    assert events[-1].reason == "denied"
    tool_msgs = [m for m in agent.messages if m.role == "tool"]
    assert len(tool_msgs) == 2 and "not run" in tool_msgs[1].content, "every call keeps a paired result"


async def test_read_only_calls_run_concurrently(workspace: Path) -> None:
    for i in range(3):
        (workspace / f"f{i}.txt").write_text(str(i))
    calls = [ScriptCall(name="file_read", arguments={"path": f"f{i}.txt"}) for i in range(3)]
    calls.append(ScriptCall(name="list_directory", arguments={}))
    agent = agent_for(workspace, [ScriptTurn(tool_calls=calls), ScriptTurn(text="read")])
    events = await collect(agent.run("read all"))
    kinds = [e.type for e in events if e.type in ("tool_started", "tool_result")]
    assert kinds[:4] == ["tool_started"] * 4, "all read-only calls started before any finished"
    results = [m for m in agent.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == [c.id for c in agent.messages[1].tool_calls], "results keep call order"


async def test_cancel_kills_shell_and_closes_calls(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    code = f"import pathlib,time; pathlib.Path({str(marker)!r}).write_text('1'); time.sleep(30)"
    agent = agent_for(
        workspace,
        [
            ScriptTurn(
                tool_calls=[ScriptCall(name="shell_execute", arguments={"command": f'{sys.executable} -c "{code}"'})]
            ),
            ScriptTurn(text="x"),
        ],
        policy=ApprovalPolicy(mode="auto"),
    )
    events: list[Event] = []

    async def consume() -> None:
        async for event in agent.run_task("sleep"):
            events.append(event)

    task = asyncio.create_task(consume())
    for _ in range(200):
        if marker.exists():
            break
        await asyncio.sleep(0.05)
    assert agent.running and agent.cancel()
    await asyncio.wait_for(task, 10)
    assert events[-1].type == "session_ended" and events[-1].reason == "cancelled"
    assert agent.messages[-1].role == "tool" and agent.messages[-1].is_error
    assert not agent.running


async def test_cancel_during_model_stream(workspace: Path) -> None:
    agent = agent_for(workspace, [ScriptTurn(text="a slow answer " * 20, delay=0.05)])
    seen: list[Event] = []

    async def consume() -> None:
        async for event in agent.run("x"):
            seen.append(event)
            if event.type == "text_delta":
                agent.cancel()

    await asyncio.wait_for(consume(), 10)
    assert seen[-1].type == "turn_completed" and seen[-1].reason == "cancelled"
    again = agent_for(workspace, [ScriptTurn(text="fine")])
    assert (await collect(again.run("y")))[-1].reason == "completed"


async def test_backend_error_ends_turn_with_error_event(workspace: Path) -> None:
    agent = agent_for(workspace, [ScriptTurn(error="the server is on fire", error_kind="server_error")])
    events = await collect(agent.run_task("x"))
    errors = [e for e in events if e.type == "error"]
    assert errors and errors[0].fatal and errors[0].kind == "server_error"
    assert events[-1].reason == "error" and "on fire" in events[-1].message


async def test_system_prompt_names_the_model(workspace: Path) -> None:
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[ScriptTurn(text="hi")], model="tiny-1")),
        workspace=workspace,
        options=AgentOptions(system_prompt="You are {model} in {workspace}; {unknown} stays."),
    )
    assert agent.system_prompt == f"You are tiny-1 in {workspace.resolve()}; {{unknown}} stays."
