"""Budgets: turns, dollars, tokens and wall time end a run cleanly with reason ``budget``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.agent.budget import Budget, Limits, parse_limits
from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.scripted import ScriptCall, ScriptTurn
from tests.support.cli import invoke, write_script
from tests.support.agent import agent_for, collect


def budgeted(workspace: Path, turns: list[ScriptTurn], limits: Limits) -> Agent:
    return agent_for(workspace, turns, options=AgentOptions(limits=limits))


def ls(path: str = ".") -> ScriptCall:
    return ScriptCall(name="list_directory", arguments={"path": path})


def test_a_child_budget_charges_its_root_and_stops_with_it() -> None:
    root = Budget(Limits(max_budget_usd=1.0))
    child = root.child(Limits(max_tokens=100), owner="explore")
    grandchild = child.child()
    grandchild.charge(input_tokens=10, output_tokens=5, cost_usd=0.4)
    assert (root.tokens, root.cost_usd, child.tokens) == (15, 0.4, 15)
    assert grandchild.check() is None
    grandchild.charge(cost_usd=0.7)
    over = grandchild.check()
    assert over is not None and (over.budget, over.owner, over.limit) == ("max_budget_usd", "main", 1.0)
    assert root.check() is over, "reached stays reached, for every agent sharing the root"
    assert "$1.1000 of $1.0000" in over.describe() and over.subtype == "error_max_budget_usd"


def test_turns_allow_that_many_responses() -> None:
    budget = Budget(Limits(max_turns=2))
    budget.charge(turns=2)
    assert budget.check() is None, "the second response's tool calls may still run"
    assert budget.check(starting=True) is not None, "a third response may not start"


def test_bad_limits_are_refused_with_the_origin() -> None:
    with pytest.raises(ValueError, match=r"agents/x.md: max_turns must be a whole number"):
        parse_limits({"max_turns": 1.5}, "agents/x.md")
    with pytest.raises(ValueError, match="max_budget_usd must be a number of 0 or more"):
        parse_limits({"max_budget_usd": -1}, "[budget]")
    assert Limits(max_turns=3).tighter(Limits(max_turns=5, max_wall=2)) == Limits(max_turns=3, max_wall=2)


async def test_max_turns_stops_before_the_next_model_call(workspace: Path) -> None:
    agent = budgeted(
        workspace,
        [ScriptTurn(tool_calls=[ls()]), ScriptTurn(tool_calls=[ls("..")]), ScriptTurn(text="never")],
        Limits(max_turns=2),
    )
    events = await collect(agent.run_task("look around"))
    assert agent.backend.calls == 2  # type: ignore[attr-defined]
    assert [e.type for e in events].count("tool_result") == 2, "the second response's call still ran"
    reached = [e for e in events if e.type == "budget_reached"]
    assert [(e.budget, e.used, e.limit) for e in reached] == [("max_turns", 2, 2)]
    end = events[-1]
    assert end.type == "session_ended" and end.reason == "budget"
    assert "budget max_turns reached: 2 of 2 model responses" in end.message


async def test_cost_reached_after_a_response_leaves_its_calls_unrun(workspace: Path) -> None:
    agent = budgeted(
        workspace,
        [ScriptTurn(tool_calls=[ls()], usage={"cost_usd": 0.02}), ScriptTurn(text="never")],
        Limits(max_budget_usd=0.01),
    )
    events = await collect(agent.run_task("look"))
    assert not [e for e in events if e.type == "tool_started"]
    reached = [e for e in events if e.type == "budget_reached"]
    assert [(e.budget, e.used, e.limit) for e in reached] == [("max_budget_usd", 0.02, 0.01)]
    assert agent.messages[-1].role == "tool" and agent.messages[-1].content.startswith("not run"), (
        "the unrun call is answered, so the conversation can go on"
    )


async def test_tokens_are_checked_before_each_tool_call(workspace: Path) -> None:
    agent = budgeted(
        workspace,
        [ScriptTurn(tool_calls=[ls()], usage={"input_tokens": 40, "output_tokens": 20}), ScriptTurn(text="never")],
        Limits(max_tokens=60),
    )
    events = await collect(agent.run_task("look"))
    assert [(e.budget, e.used) for e in events if e.type == "budget_reached"] == [("max_tokens", 60)]
    assert events[-1].reason == "budget"


async def test_wall_time_stops_a_long_tool_call(workspace: Path) -> None:
    sleep = ScriptCall(name="shell_execute", arguments={"command": "sleep 30", "timeout": 60})
    agent = budgeted(workspace, [ScriptTurn(tool_calls=[sleep]), ScriptTurn(text="never")], Limits(max_wall=0.5))
    agent.policy.mode = "auto"
    events = await collect(agent.run_task("wait"))
    reached = [e for e in events if e.type == "budget_reached"]
    assert len(reached) == 1 and reached[0].budget == "max_wall" and reached[0].used >= 0.5
    assert events[-1].reason == "budget"
    assert agent.messages[-1].role == "tool", "the stopped call is answered"


def test_cli_budget_exit_status_and_json_subtype(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}], "usage": {"cost_usd": 0.5}},
            {"text": "never"},
        ],
    )
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "json",
            "--max-budget-usd",
            "0.25",
            "--task",
            "look",
        ],
        home=monkey_home,
    )
    assert run.returncode == 5, run.stderr
    out = json.loads(run.stdout)
    assert out["subtype"] == "error_max_budget_usd" and out["reason"] == "budget" and out["is_error"]
    assert out["budget"] == {
        "budget": "max_budget_usd",
        "used": 0.5,
        "limit": 0.25,
        "owner": "main",
        "scope": "session",
        "earlier": 0.0,
    }
    assert "budget max_budget_usd reached: $0.5000 of $0.2500" in run.stderr


def test_cli_budget_from_config_and_bad_values(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "list_directory", "arguments": {}}]}, {"text": "never"}]
    )
    (monkey_home / "config.toml").write_text("[budget]\nmax_turns = 1\n")
    base = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "look"]
    run = invoke([*base, "--output-format", "stream-json"], home=monkey_home)
    assert run.returncode == 5, run.stderr
    assert [e["budget"] for e in run.of_type("budget_reached")] == ["max_turns"]
    run = invoke([*base, "--max-turns", "5"], home=monkey_home)
    assert run.returncode == 0, "the flag is over the config"
    (monkey_home / "config.toml").write_text("[budget]\nmax_wall = -3\n")
    run = invoke(base, home=monkey_home)
    assert run.returncode == 2 and run.stderr.strip().splitlines()[-1].startswith("monkey: [budget]: max_wall must be")
    run = invoke([*base, "--max-budget-usd", "lots"], home=monkey_home)
    assert run.returncode == 2 and "not a number: 'lots'" in run.stderr


async def test_wall_time_counts_turns_not_the_time_between_them(workspace: Path) -> None:
    agent = budgeted(
        workspace, [ScriptTurn(text="one"), ScriptTurn(text="two"), ScriptTurn(text="never")], Limits(max_wall=10)
    )
    now = [1000.0]
    agent.budget.clock = lambda: now[0]
    assert (await collect(agent.run_task("first")))[-1].reason == "completed"
    now[0] += 3600  # the person went for lunch with the app open
    assert (await collect(agent.run_task("second")))[-1].reason == "completed", "an idle hour is not the agent's"
    assert agent.budget.wall == 0.0

    budget = Budget(Limits(max_wall=10), clock=lambda: now[0])
    budget.start()
    now[0] += 4
    budget.pause()
    now[0] += 500
    assert budget.wall == 4.0 and budget.check() is None
    budget.start()
    assert budget.deadline() == now[0] + 6, "the turn gets what the earlier turns left"
    now[0] += 6
    over = budget.check()
    assert over is not None and over.used == 10.0
