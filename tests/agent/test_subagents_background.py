"""Background sub-agents: ``task`` with ``background`` returns at once; the handoff reaches the model later."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from monkey.events import Event
from tests.support.agent import collect, of, root_agent, task

WAIT_FOR_GO = "sh wait.sh"
"""A command that ends as soon as another agent writes ``go`` (or after 30 s without it)."""


@pytest.fixture(autouse=True)
def _wait_script(workspace: Path) -> None:
    (workspace / "wait.sh").write_text(
        "for i in $(seq 600); do [ -f go ] && break; sleep 0.05; done\n"
        "if [ -f go ]; then echo 'saw go'; else echo 'no go'; fi\n"
    )


async def test_a_background_child_works_while_its_parent_goes_on(workspace: Path, monkey_home: Path) -> None:
    write_go = {"name": "file_write", "arguments": {"path": "go", "content": "now\n"}}
    script = {
        "turns": [
            {"tool_calls": [task("general", "wait for go", "waiter", background=True)]},
            {"tool_calls": [write_go]},
            {"text": "Waiting for the waiter."},
            {"text": "The waiter saw go."},
        ],
        "agents": {
            "general": {
                "turns": [
                    {"tool_calls": [{"name": "shell_execute", "arguments": {"command": WAIT_FOR_GO}}]},
                    {"text": "I saw go."},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("delegate, then say go"))
    sid = agent.session_id
    [started] = of(events, "subagent_started")
    [done] = of(events, "subagent_completed")
    child = started.child_session_id
    assert started.background and done.call_id == started.call_id
    [shell] = of(events, "tool_result", child)
    assert shell.output.startswith("saw go\n"), "the child ran while its parent wrote go"
    results = of(events, "tool_result", sid)
    assert [r.name for r in results] == ["task", "file_write"]
    assert results[0].ok and results[0].output.startswith(f"started general in the background (session {child})")
    position = {id(e): i for i, e in enumerate(events)}
    assert position[id(results[0])] < position[id(of(events, "session_ended", child)[0])]

    # the model was woken with the handoff after it ended its answer while the child still ran
    last = agent.backend.requests[-1].messages  # type: ignore[attr-defined]
    assert last[-2].role == "assistant" and last[-2].content == "Waiting for the waiter."
    assert last[-1].role == "user" and last[-1].content.startswith(
        f"The background task 'waiter' (task call {started.call_id}) ended:\nagent: general (session {child})\n"
        "completed: yes"
    )
    assert last[-1].content.endswith("summary:\nI saw go.")
    [completed] = of(events, "turn_completed", sid)
    assert (completed.reason, completed.result, completed.iterations) == ("completed", "The waiter saw go.", 4)
    assert done.handoff.completed and done.handoff.summary == "I saw go."

    # every event of the child names the parent's call; the parent's own events name none
    assert {e.parent_call_id for e in events if e.session_id == child} == {started.call_id}
    assert all(e.parent_call_id is msgspec.UNSET for e in events if e.session_id == sid)


async def test_a_background_childs_handoff_arrives_before_the_next_model_call(
    workspace: Path, monkey_home: Path
) -> None:
    script = {
        "turns": [
            {"tool_calls": [task("general", "quick", "quick one", background=True)]},
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": WAIT_FOR_GO}}]},
            {"text": "Both done."},
        ],
        "agents": {
            "general": {
                "turns": [
                    {"tool_calls": [{"name": "file_write", "arguments": {"path": "go", "content": "x\n"}}]},
                    {"text": "Wrote go."},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("two things at once"))
    [shell] = of(events, "tool_result", agent.session_id)[1:]
    assert shell.output.startswith("saw go\n"), "the parent's command saw what its background child wrote"
    last = agent.backend.requests[-1].messages  # type: ignore[attr-defined]
    assert last[-2].role == "tool" and last[-1].role == "user" and "summary:\nWrote go." in last[-1].content
    assert len(agent.backend.requests) == 3, "the handoff came with the next call, not a call of its own"
    assert events[-1].type == "session_ended" and events[-1].reason == "completed"


async def test_stopping_the_turn_stops_its_background_children(workspace: Path, monkey_home: Path) -> None:
    script = {
        "turns": [
            {"tool_calls": [task("general", "sleep", "sleeper", background=True)]},
            {"text": "Waiting."},
            {"text": "never"},
        ],
        "agents": {
            "general": {
                "turns": [
                    {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "sleep 600"}}]},
                    {"text": "never"},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events: list[Event] = []

    async def consume() -> None:
        async for event in agent.run_task("sleep in the background"):
            events.append(event)
            if event.type == "tool_started" and event.session_id != agent.session_id:
                agent.cancel()

    await asyncio.wait_for(consume(), timeout=120)
    [started] = of(events, "subagent_started")
    child = started.child_session_id
    [ended] = of(events, "session_ended", child)
    assert (ended.reason, ended.message) == ("cancelled", "its parent was stopped")
    [completed] = of(events, "turn_completed", agent.session_id)
    assert completed.reason == "cancelled"
    position = {id(e): i for i, e in enumerate(events)}
    assert position[id(ended)] < position[id(completed)], "the child's end is recorded before its parent's"
    assert not agent.background.busy


async def test_a_turn_cut_short_cancels_children_still_running(workspace: Path, monkey_home: Path) -> None:
    script = {
        "turns": [
            {"tool_calls": [task("general", "sleep", "sleeper", background=True)]},
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": WAIT_FOR_GO}}]},
            {"text": "Waiting."},
        ],
        "agents": {
            "general": {
                "turns": [
                    {"tool_calls": [{"name": "file_write", "arguments": {"path": "go", "content": "x\n"}}]},
                    {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "sleep 600"}}]},
                    {"text": "never"},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    agent.options.max_iterations = 3
    events = await asyncio.wait_for(collect(agent.run_task("three calls only")), timeout=120)
    [started] = of(events, "subagent_started")
    [ended] = of(events, "session_ended", started.child_session_id)
    assert (ended.reason, ended.message) == ("cancelled", "its parent was stopped")
    [completed] = of(events, "turn_completed", agent.session_id)
    assert completed.reason == "max_iterations" and "still running in the background" in completed.message
    assert not of(events, "subagent_completed"), "a child cut short hands nothing back"


async def test_a_background_child_that_cannot_start_says_why(workspace: Path, monkey_home: Path) -> None:
    from tests.support.agent import define

    define(workspace, "remote", "description: runs elsewhere\nmodel: some-other-model")
    script = {
        "turns": [
            {"tool_calls": [task("remote", "go", "elsewhere", background=True)]},
            {"text": "Waiting."},
            {"text": "It could not start."},
        ]
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await asyncio.wait_for(collect(agent.run_task("delegate")), timeout=60)
    assert not of(events, "subagent_started"), "no child session was started"
    last = agent.backend.requests[-1].messages  # type: ignore[attr-defined]
    assert (
        last[-1].role == "user"
        and "completed: no (error: agent remote names its own backend or model" in last[-1].content
    )
    [completed] = of(events, "turn_completed", agent.session_id)
    assert (completed.reason, completed.result) == ("completed", "It could not start.")


async def test_a_person_stopping_a_background_child_stops_its_parent(workspace: Path, monkey_home: Path) -> None:
    from monkey.permissions.requests import Decision
    from tests.support.fakes.approvers import AnsweringApprover

    write = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}
    script = {
        "turns": [
            {"tool_calls": [task("general", "write", "writer", background=True)]},
            {"text": "Waiting."},
            {"text": "never"},
        ],
        "agents": {"general": {"turns": [{"tool_calls": [write]}, {"text": "never"}]}},
    }
    agent = root_agent(workspace, monkey_home, script, mode="default")
    agent.approver = AnsweringApprover(Decision(approved=False, by="user", reason="", stop=True))
    events = await asyncio.wait_for(collect(agent.run_task("try")), timeout=60)
    assert not (workspace / "x.txt").exists()
    [done] = of(events, "subagent_completed")
    assert not done.handoff.completed and done.handoff.reason == "denied"
    [completed] = of(events, "turn_completed", agent.session_id)
    assert completed.reason == "denied"
    assert agent.backend.calls == 2, "the parent stopped without asking its model again"


async def test_switching_the_parent_to_plan_mode_reaches_its_running_background_child(
    workspace: Path, monkey_home: Path
) -> None:
    from monkey.permissions.requests import ApprovalRequest, Decision

    agent_box: list = []

    class PersonWhoSwitchesToPlan:
        """Approves the child's first call, and while asked, switches the session to plan mode (Shift+Tab)."""

        def __init__(self) -> None:
            self.requests: list[ApprovalRequest] = []

        async def decide(self, request: ApprovalRequest) -> Decision:
            self.requests.append(request)
            agent_box[0].policy.set_mode("plan")
            return Decision(approved=True)

    first = {"name": "file_write", "arguments": {"path": "before.txt", "content": "before\n"}}
    then = {"name": "file_write", "arguments": {"path": "after.txt", "content": "after\n"}}
    script = {
        "turns": [
            {"tool_calls": [task("general", "write twice", "writer", background=True)]},
            {"text": "Waiting."},
            {"text": "The writer ended."},
        ],
        "agents": {"general": {"turns": [{"tool_calls": [first]}, {"tool_calls": [then]}, {"text": "done"}]}},
    }
    agent = root_agent(workspace, monkey_home, script, mode="default")
    agent_box.append(agent)
    person = PersonWhoSwitchesToPlan()
    agent.approver = person
    events = await asyncio.wait_for(collect(agent.run_task("write")), timeout=60)
    [started] = of(events, "subagent_started")
    child = started.child_session_id
    assert (workspace / "before.txt").read_text() == "before\n"  # approved before the switch
    assert not (workspace / "after.txt").exists(), "the child's next write ran in the parent's new plan mode"
    assert len(person.requests) == 1, "plan mode refuses the write: nobody is asked"
    results = of(events, "tool_result", child)
    assert [r.ok for r in results] == [True, False] and "plan mode is read-only" in results[1].output
