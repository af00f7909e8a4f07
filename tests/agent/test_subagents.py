"""Sub-agents in-process: delegation, parallel children, depth, cycles, permissions, budgets, undo."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from monkey.agent.agent_defs import discover_agents
from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.budget import Limits
from monkey.agent.loop import Agent
from monkey.agent.subagents import Delegation, TaskTool, install_task_tool
from monkey.backends.scripted import Script, ScriptedBackend
from tests.support.cli import invoke_async
from tests.support.agent import collect, define, of, root_agent, task


async def test_delegation_returns_a_handoff(workspace: Path, monkey_home: Path) -> None:
    (workspace / "notes.txt").write_text("the answer is 42\n")
    script = {
        "turns": [{"tool_calls": [task("explore", "find the answer")]}, {"text": "It is 42."}],
        "agents": {
            "explore": {
                "turns": [
                    {
                        "tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}],
                        "usage": {"cost_usd": 0.01},
                    },
                    {"text": "notes.txt says the answer is 42.", "usage": {"cost_usd": 0.02}},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("what is the answer?"))
    [started] = of(events, "subagent_started")
    [done] = of(events, "subagent_completed")
    child = started.child_session_id
    assert started.session_id == agent.session_id and started.agent == "explore" and started.depth == 1
    assert child != agent.session_id and done.child_session_id == child and done.call_id == started.call_id
    h = done.handoff
    assert (h.agent, h.session_id, h.completed, h.turns, h.files_changed) == ("explore", child, True, 2, [])
    assert h.summary == "notes.txt says the answer is 42." and abs(h.cost_usd - 0.03) < 1e-9
    assert h.key_outputs and h.key_outputs[0].startswith("file_read: ")
    assert [e.type for e in events if e.session_id == child][:2] == ["session_started", "turn_started"]
    assert of(events, "session_ended", child)[0].reason == "completed"
    [result] = of(events, "tool_result", agent.session_id)
    assert result.ok and result.name == "task"
    assert result.output.startswith(f"agent: explore (session {child})\ncompleted: yes\nturns: 2, cost: $0.0300")
    assert result.output.endswith("summary:\nnotes.txt says the answer is 42.")
    assert events[-1].type == "session_ended" and events[-1].session_id == agent.session_id
    assert events[-1].reason == "completed"
    assert agent.budget.cost_usd >= 0.03, "the child's cost is charged to the root"
    explore_request = agent.backend.fork("explore", 9).requests[0]  # type: ignore[attr-defined]
    assert "read-only sub-agent" in explore_request.system
    assert sorted(t.name for t in explore_request.tools if not t.name.startswith("memory_")) == [
        "file_read",
        "glob_search",
        "grep_search",
        "list_directory",
        "shell_execute",
    ]
    assert explore_request.messages[0].content == "find the answer", "its own conversation"


async def test_two_children_run_in_parallel(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    # each child's command marks that it runs, then waits for the other's mark: run one after the
    # other, the first would wait in vain (and fail); together, both see two marks at once
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    code = (
        f"import os, sys, time; d = {str(meeting)!r}; open(os.path.join(d, str(os.getpid())), 'w').close(); "
        "sys.exit(0 if any(len(os.listdir(d)) >= 2 or time.sleep(0.02) for _ in range(3000)) else 1)"
    )
    meet = {
        "name": "shell_execute",
        "arguments": {"command": f"{sys.executable} -c {json.dumps(code)}", "timeout": 120},
    }
    child = {"turns": [{"tool_calls": [meet]}, {"text": "met"}]}
    script = {
        "turns": [{"tool_calls": [task("general", "meet a"), task("general", "meet b")]}, {"text": "both"}],
        "agents": {"general#1": child, "general#2": child},
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("meet twice"))
    done = of(events, "subagent_completed")
    assert len(done) == 2 and all(d.handoff.completed for d in done)
    runs = {e.session_id: e for e in events if e.type == "tool_started" and e.name == "shell_execute"}
    ends = {e.session_id: e for e in events if e.type == "tool_result" and e.name == "shell_execute"}
    assert len(ends) == 2 and all(e.ok for e in ends.values()), [e.output for e in ends.values()]
    (a, b) = sorted(runs)
    assert runs[a].ts < ends[b].ts and runs[b].ts < ends[a].ts, "each command started before the other ended"


async def test_max_parallel_makes_children_wait(workspace: Path, monkey_home: Path) -> None:
    sleep = {"name": "shell_execute", "arguments": {"command": "sleep 0.3"}}
    child = {"turns": [{"tool_calls": [sleep]}, {"text": "slept"}]}
    script = {
        "turns": [{"tool_calls": [task("general"), task("general")]}, {"text": "both"}],
        "agents": {"general#1": child, "general#2": child},
    }
    agent = root_agent(workspace, monkey_home, script, max_parallel=1)
    events = await collect(agent.run_task("one at a time"))
    ends = [e for e in events if e.type == "session_ended" and e.session_id != agent.session_id]
    starts = of(events, "subagent_started")
    assert len(ends) == 2 and starts[1].ts >= ends[0].ts, "the second child started after the first ended"


async def test_depth_limit_both_ways(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "a", "description: level one")
    define(workspace, "b", "description: level two")
    script = {
        "turns": [{"tool_calls": [task("a")]}, {"text": "done"}],
        "agents": {
            "a": {"turns": [{"tool_calls": [task("b")]}, {"text": "a done"}]},
            "b": {"turns": [{"tool_calls": [task("general")]}, {"text": "b gave up"}]},
        },
    }
    agent = root_agent(workspace, monkey_home, script, max_depth=2)
    events = await collect(agent.run_task("go deep"))
    b_backend = agent.backend.fork("b", 9)  # type: ignore[attr-defined]
    assert "task" not in [t.name for t in b_backend.requests[0].tools], "the deepest level is not offered task"
    [refused] = [e for e in events if e.type == "tool_result" and e.name == "task" and not e.ok]
    assert "unknown tool 'task'" in refused.output
    assert [e.depth for e in of(events, "subagent_started")] == [1, 2]
    # and a task tool that is there anyway (a definition cannot bring it back) refuses at run time
    deep = TaskTool(
        agent,
        Delegation(discover_agents(workspace, home=monkey_home, trusted=True), max_depth=2),
        depth=2,
        stack=("main", "a", "b"),
    )
    call = await collect(_one_call(agent, deep))
    [result] = of(call, "tool_result")
    assert not result.ok and "nest 2 deep at most" in result.output and "main → a → b → general" in result.output


async def _one_call(agent: Agent, tool: TaskTool):  # type: ignore[no-untyped-def]
    agent.tools.remove("task")
    agent.tools.add(tool)
    async for event in agent.run_tool("task", {"description": "x", "prompt": "y", "agent": "general"}, via="test"):
        yield event


async def test_a_cycle_is_refused_naming_the_chain(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "ping", "description: calls pong")
    define(workspace, "pong", "description: calls ping")
    script = {
        "turns": [{"tool_calls": [task("ping")]}, {"text": "done"}],
        "agents": {
            "ping": {"turns": [{"tool_calls": [task("pong")]}, {"text": "ping done"}]},
            "pong": {"turns": [{"tool_calls": [task("ping")]}, {"text": "pong done"}]},
        },
    }
    agent = root_agent(workspace, monkey_home, script, max_depth=5)
    events = await collect(agent.run_task("loop"))
    refused = [e for e in events if e.type == "tool_result" and e.name == "task" and not e.ok]
    assert len(refused) == 1
    assert "cycle: ping is already on the call stack (main → ping → pong → ping)" in refused[0].output
    assert events[-1].reason == "completed"


async def test_a_child_never_gets_a_tool_its_parent_lacks(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "reader", "description: reads\ntools: [file_read, task]")
    define(workspace, "writer", "description: writes\ntools: [file_write]")
    write = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}
    script = {
        "turns": [{"tool_calls": [task("reader")]}, {"text": "done"}],
        "agents": {
            "reader": {"turns": [{"tool_calls": [task("writer")]}, {"text": "reader done"}]},
            "writer": {"turns": [{"tool_calls": [write]}, {"text": "could not"}]},
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("write through two agents"))
    writer = agent.backend.fork("writer", 9)  # type: ignore[attr-defined]
    assert [t.name for t in writer.requests[0].tools if not t.name.startswith("memory_")] == [], (
        "its parent had no file_write to give"
    )
    [denied] = [e for e in events if e.type == "tool_result" and e.name == "file_write"]
    assert not denied.ok and "unknown tool 'file_write'" in denied.output
    assert not (workspace / "x.txt").exists()


async def test_a_child_keeps_its_parents_rules_and_mode(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "bold", "description: wants more\nmode: auto")
    write = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}
    shell = {"name": "shell_execute", "arguments": {"command": "rm -f README.md"}}
    script = {
        "turns": [{"tool_calls": [task("bold")]}, {"text": "done"}],
        "agents": {"bold": {"turns": [{"tool_calls": [write, shell]}, {"text": "tried"}]}},
    }
    agent = root_agent(workspace, monkey_home, script, mode="plan")
    agent.policy.deny.extend(ApprovalPolicy.from_strings(deny=["shell_execute(rm)"]).deny)
    events = await collect(agent.run_task("try"))
    results = {e.name: e for e in events if e.type == "tool_result" and e.name != "task"}
    assert not results["file_write"].ok and not results["shell_execute"].ok
    assert not (workspace / "x.txt").exists() and (workspace / "README.md").exists()
    resolved = [e for e in events if e.type == "approval_resolved"]
    assert all(e.decision == "denied" for e in resolved) and len(resolved) == 2


async def test_a_childs_spending_stops_its_parent(workspace: Path, monkey_home: Path) -> None:
    costly = {
        "turns": [
            {"tool_calls": [{"name": "list_directory", "arguments": {}}], "usage": {"cost_usd": 0.6}},
            {"tool_calls": [{"name": "list_directory", "arguments": {}}], "usage": {"cost_usd": 0.6}},
            {"text": "never"},
        ]
    }
    script = {"turns": [{"tool_calls": [task("general")]}, {"text": "never"}], "agents": {"general": costly}}
    agent = root_agent(workspace, monkey_home, script, limits=Limits(max_budget_usd=1.0))
    events = await collect(agent.run_task("spend"))
    child = of(events, "subagent_started")[0].child_session_id
    reached = of(events, "budget_reached")
    assert reached and reached[0].session_id == child and reached[0].owner == "main"
    assert (reached[0].budget, reached[0].used, reached[0].limit) == ("max_budget_usd", 1.2, 1.0)
    [done] = of(events, "subagent_completed")
    assert not done.handoff.completed and done.handoff.reason == "budget"
    assert events[-1].type == "session_ended" and events[-1].session_id == agent.session_id
    assert events[-1].reason == "budget", "the parent stopped with its child"
    assert agent.backend.calls == 1, "the parent made no model call after the child came back"


async def test_a_child_is_bounded_by_its_own_definition(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "short", "description: two turns\nmax_turns: 1")
    ls = {"name": "list_directory", "arguments": {}}
    script = {
        "turns": [{"tool_calls": [task("short")]}, {"text": "the parent goes on"}],
        "agents": {"short": {"turns": [{"tool_calls": [ls]}, {"text": "never"}]}},
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await collect(agent.run_task("bounded"))
    [reached] = of(events, "budget_reached")
    assert reached.owner.startswith("short ") and reached.budget == "max_turns"
    assert events[-1].reason == "completed", "only the child's own budget was reached"


async def test_undo_reverts_a_childs_change(workspace: Path, monkey_home: Path) -> None:
    write = {"name": "file_write", "arguments": {"path": "made.txt", "content": "by the child\n"}}
    script = {
        "turns": [{"tool_calls": [task("general", "write it")]}, {"text": "done"}],
        "agents": {"general": {"turns": [{"tool_calls": [write]}, {"text": "wrote made.txt"}]}},
    }
    agent = root_agent(workspace, monkey_home, script, checkpoints=True)
    events = await collect(agent.run_task("make a file"))
    [done] = of(events, "subagent_completed")
    assert done.handoff.files_changed == ["made.txt"]
    [checkpoint] = of(events, "checkpoint_created")
    assert checkpoint.session_id == done.child_session_id
    assert (workspace / "made.txt").read_text() == "by the child\n"
    undo = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists()


async def test_bad_calls_say_what_is_wrong(workspace: Path, monkey_home: Path) -> None:
    script = {"turns": [{"tool_calls": [task("nobody"), task("general", unknown=True)]}, {"text": "ok"}]}
    agent = root_agent(workspace, monkey_home, script, max_per_turn=1)
    events = await collect(agent.run_task("bad"))
    outputs = {e.call_id: e.output for e in of(events, "tool_result")}
    first, second = (e.call_id for e in of(events, "tool_call"))
    assert "no agent named 'nobody'; the agents are: explore, general" in outputs[first]
    assert "unknown field `unknown`" in outputs[second] and not of(events, "subagent_started")


async def test_children_per_turn_are_capped(workspace: Path, monkey_home: Path) -> None:
    script = {
        "turns": [{"tool_calls": [task("general", "a"), task("general", "b")]}, {"text": "ok"}],
        "agents": {"general": {"turns": [{"text": "did it", "repeat": 2}]}},
    }
    agent = root_agent(workspace, monkey_home, script, max_per_turn=1)
    events = await collect(agent.run_task("two"))
    results = of(events, "tool_result", agent.session_id)
    assert sorted(r.ok for r in results) == [False, True]
    [refused] = [r for r in results if not r.ok]
    assert "at most 1 sub-agents per turn ([subagents] max_per_turn)" in refused.output
    assert len(of(events, "subagent_started")) == 1


async def test_a_child_with_children_does_not_wait_for_its_own_slot(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "lead", "description: delegates further")
    script = {
        "turns": [{"tool_calls": [task("lead")]}, {"text": "done"}],
        "agents": {
            "lead": {"turns": [{"tool_calls": [task("general")]}, {"text": "lead done"}]},
            "general": {"turns": [{"text": "leaf done"}]},
        },
    }
    agent = root_agent(workspace, monkey_home, script, max_parallel=1)
    events = await asyncio.wait_for(collect(agent.run_task("nest")), timeout=30)
    assert [d.handoff.completed for d in of(events, "subagent_completed")] == [True, True]
    assert events[-1].reason == "completed"


async def test_a_person_stopping_a_child_stops_its_parent(workspace: Path, monkey_home: Path) -> None:
    from monkey.permissions.requests import Decision
    from tests.support.fakes.approvers import AnsweringApprover

    write = {"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}
    script = {
        "turns": [{"tool_calls": [task("general")]}, {"text": "never"}],
        "agents": {"general": {"turns": [{"tool_calls": [write]}, {"text": "never"}]}},
    }
    agent = root_agent(workspace, monkey_home, script, mode="default")
    approver = AnsweringApprover(Decision(approved=False, by="user", reason="", stop=True))
    agent.approver = approver
    events = await collect(agent.run_task("try"))
    assert len(approver.requests) == 1, "the child asked the parent's approver"
    assert not (workspace / "x.txt").exists()
    [done] = of(events, "subagent_completed")
    assert not done.handoff.completed and done.handoff.reason == "denied"
    assert events[-1].session_id == agent.session_id and events[-1].reason == "denied"
    assert agent.backend.calls == 1, "the parent stopped without asking its model again"
    assert agent.messages[-1].role == "tool" and "completed: no" in agent.messages[-1].content


async def test_always_in_a_child_holds_for_its_parent_and_later_children(workspace: Path, monkey_home: Path) -> None:
    from monkey.permissions.requests import Decision
    from tests.support.fakes.approvers import AnsweringApprover

    def write(path: str) -> dict[str, Any]:
        return {"name": "file_write", "arguments": {"path": path, "content": path}}

    script = {
        "turns": [
            {"tool_calls": [task("general", "a")]},
            {"tool_calls": [task("general", "b")]},
            {"tool_calls": [write("c.txt")]},
            {"text": "all written"},
        ],
        "agents": {
            "general#1": {"turns": [{"tool_calls": [write("a.txt")]}, {"text": "wrote a"}]},
            "general#2": {"turns": [{"tool_calls": [write("b.txt")]}, {"text": "wrote b"}]},
        },
    }
    agent = root_agent(workspace, monkey_home, script, mode="default")
    approver = AnsweringApprover(Decision(approved=True, by="user", scope="always"))
    agent.approver = approver
    events = await collect(agent.run_task("write three files"))
    assert [r.arguments["path"] for r in approver.requests] == ["a.txt"], "asked once, for the first child's write"
    assert sorted(p.name for p in workspace.glob("*.txt")) == ["a.txt", "b.txt", "c.txt"]
    later = [e for e in of(events, "approval_resolved")][1:]
    kept = ("rule", f"allowed by rule file_write({workspace.resolve()}/**)")  # "always": the folder's rule
    assert [(e.by, e.reason) for e in later] == [kept] * 2, "the rule kept for good is shared by the whole tree"
    assert events[-1].reason == "completed"


async def test_the_permission_engine_decides_task_calls(workspace: Path, monkey_home: Path) -> None:
    script = {
        "turns": [{"tool_calls": [task("explore"), task("general")]}, {"text": "ok"}],
        "agents": {"explore": {"turns": [{"text": "explored"}]}},
    }
    agent = root_agent(workspace, monkey_home, script)
    agent.policy.deny.extend(ApprovalPolicy.from_strings(deny=["task(general)"]).deny)
    events = await collect(agent.run_task("two"))
    results = {e.call_id: e for e in of(events, "tool_result", agent.session_id)}
    denied = [e for e in of(events, "approval_resolved") if e.decision == "denied"]
    assert len(denied) == 1 and denied[0].by == "rule"
    assert not results[denied[0].call_id].ok and results[denied[0].call_id].output.startswith("denied")
    assert [s.agent for s in of(events, "subagent_started")] == ["explore"]


async def test_a_definition_may_name_its_own_model(workspace: Path, monkey_home: Path) -> None:
    define(workspace, "cheap", "description: on a small model\nmodel: small-model")
    built: list[tuple[str, str | None]] = []

    def make(name: str, model: str | None) -> ScriptedBackend:
        built.append((name, model))
        return ScriptedBackend(msgspec.convert({"turns": [{"text": "small answer"}], "model": model}, Script))

    script = {"turns": [{"tool_calls": [task("cheap")]}, {"text": "ok"}]}
    agent = root_agent(workspace, monkey_home, script, make_backend=make)
    events = await collect(agent.run_task("cheaply"))
    assert built == [("scripted", "small-model")]
    child = of(events, "subagent_started")[0].child_session_id
    assert of(events, "session_started", child)[0].model == "small-model"
    assert of(events, "subagent_completed")[0].handoff.summary == "small answer"


def test_a_model_with_a_small_window_is_offered_no_sub_agents(workspace: Path, monkey_home: Path) -> None:
    from monkey.context.window import ContextManager

    backend = ScriptedBackend(msgspec.convert({"turns": [], "context_window": 8192}, Script))
    agent = Agent(backend=backend, workspace=workspace, context=ContextManager(backend))
    defs = discover_agents(workspace, home=monkey_home, trusted=True)
    assert install_task_tool(agent, Delegation(defs)) is None and agent.tools.find("task") is None
    assert agent.tools.find("memory_write") is None, "nor working memory (the embedded model's 8k window)"
