"""Plan mode end to end in the loop: exit_plan_mode offered only in plan mode, the plan decided
through the one approval path, the mode it goes on in, the plan kept, and what plan mode refuses."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision, HeadlessApprover
from monkey.agent.loop import Agent
from monkey.agent.plan_mode import approve_plan, reject_plan, send_back
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import Event
from tests.support.cli import invoke, stored_events, write_script
from tests.support.fakes.approvers import AnsweringApprover
from tests.support.agent import of

PLAN = "# Plan\n\n1. Write `hello.txt` with a greeting.\n2. Check it."


def propose(plan: str = PLAN) -> ScriptTurn:
    return ScriptTurn(text="Here is my plan.", tool_calls=[ScriptCall(name="exit_plan_mode", arguments={"plan": plan})])


def write(path: str = "hello.txt") -> ScriptTurn:
    return ScriptTurn(tool_calls=[ScriptCall(name="file_write", arguments={"path": path, "content": "hi\n"})])


def plan_agent(workspace: Path, turns: list[ScriptTurn], approver: Any, mode: str = "plan") -> Agent:
    return Agent(
        backend=ScriptedBackend(Script(turns=turns)),
        workspace=workspace,
        approver=approver,
        policy=ApprovalPolicy(mode=mode),
    )  # type: ignore[arg-type]


async def run(agent: Agent, prompt: str = "greet") -> list[Event]:
    return [event async for event in agent.run_task(prompt)]


async def test_exit_plan_mode_is_offered_only_in_plan_mode(workspace: Path) -> None:
    agent = plan_agent(workspace, [ScriptTurn(text="a"), ScriptTurn(text="b")], AnsweringApprover(), mode="default")
    await run(agent)
    agent.policy.set_mode("plan")
    await run(agent)
    first, second = agent.backend.requests  # type: ignore[attr-defined]
    assert "exit_plan_mode" not in [t.name for t in first.tools] and "Plan mode" not in first.system
    assert "exit_plan_mode" in [t.name for t in second.tools] and "# Plan mode" in second.system
    assert [t.name for t in first.tools] == [t.name for t in second.tools if t.name != "exit_plan_mode"]


async def test_approved_plan_goes_on_in_accept_edits_and_the_write_runs(workspace: Path) -> None:
    approver = AnsweringApprover(approve_plan("accept-edits"))
    agent = plan_agent(workspace, [write(), propose(), write(), ScriptTurn(text="done")], approver)
    events = await run(agent)
    first, second = of(events, "tool_result")[0], of(events, "tool_result")[2]
    assert not first.ok and "plan mode is read-only" in first.output  # before the plan: refused
    assert second.ok and (workspace / "hello.txt").read_text() == "hi\n"  # after it, without asking again
    [request] = approver.requests
    assert request.plan == PLAN and request.tool == "exit_plan_mode" and not request.grant and not request.rules
    [saved] = of(events, "plan_saved")
    assert (saved.outcome, saved.mode, saved.plan, saved.path) == ("approved", "accept-edits", PLAN, "")
    [changed] = of(events, "mode_changed")
    assert (changed.previous, changed.mode, changed.by) == ("plan", "accept-edits", "plan")
    assert agent.policy.mode == "accept-edits"
    plan_result = of(events, "tool_result")[1]
    assert plan_result.ok and "now in accept-edits mode" in plan_result.output
    assert events[-1].reason == "denied"  # the write refused before the plan counts, as any refused call


async def test_approved_in_default_mode_still_asks_for_the_write(workspace: Path) -> None:
    approver = AnsweringApprover(
        approve_plan("default", save=True), Decision(approved=False, by="user", reason="not now")
    )
    agent = plan_agent(workspace, [propose(), write(), ScriptTurn(text="ok")], approver)
    events = await run(agent)
    assert agent.policy.mode == "default" and len(approver.requests) == 2
    assert approver.requests[1].tool == "file_write"
    [saved] = of(events, "plan_saved")
    assert saved.path.startswith(".monkey/plans/") and saved.path.endswith("-plan.md")
    assert (workspace / saved.path).read_text() == PLAN + "\n"


async def test_sent_back_the_model_revises_and_stays_in_plan_mode(workspace: Path) -> None:
    approver = AnsweringApprover(send_back("also add a test"), approve_plan("default"))
    agent = plan_agent(workspace, [propose(), propose(PLAN + "\n3. Add a test."), ScriptTurn(text="ok")], approver)
    events = await run(agent)
    back, approved = of(events, "plan_saved")
    assert back.outcome == "sent_back" and back.feedback == "also add a test"
    first = of(events, "tool_result")[0]
    assert not first.ok and "also add a test" in first.output and "revise the plan" in first.output
    assert approved.outcome == "approved" and approved.plan.endswith("3. Add a test.")
    assert events[-1].reason == "completed"


async def test_rejected_plan_stops_the_turn_in_plan_mode(workspace: Path) -> None:
    agent = plan_agent(workspace, [propose(), write()], AnsweringApprover(reject_plan()))
    events = await run(agent)
    [saved] = of(events, "plan_saved")
    assert saved.outcome == "rejected" and agent.policy.mode == "plan"
    assert events[-1].reason == "denied" and not of(events, "mode_changed")
    assert agent.backend.calls == 1  # type: ignore[attr-defined]


async def test_headless_records_the_plan_or_approves_it_with_the_flag(workspace: Path) -> None:
    agent = plan_agent(workspace, [propose(), write(), ScriptTurn(text="planned")], HeadlessApprover())
    events = await run(agent)
    [saved] = of(events, "plan_saved")
    assert saved.outcome == "recorded" and agent.policy.mode == "plan"
    assert not (workspace / "hello.txt").exists() and events[-1].reason == "denied"  # the write after it: refused
    assert "stays in plan mode" in of(events, "tool_result")[0].output
    agent = plan_agent(
        workspace, [propose(), write(), ScriptTurn(text="done")], HeadlessApprover(approve_plan="accept-edits")
    )
    events = await run(agent)
    assert (workspace / "hello.txt").exists() and agent.policy.mode == "accept-edits"


async def test_exit_plan_mode_outside_plan_mode_is_refused(workspace: Path) -> None:
    approver = AnsweringApprover()
    agent = plan_agent(workspace, [propose(), ScriptTurn(text="ok")], approver, mode="default")
    events = await run(agent)
    [result] = of(events, "tool_result")
    assert not result.ok and "for plan mode only" in result.output
    assert not approver.requests and not of(events, "plan_saved")


def test_policy_plan_mode_refuses_writes_and_unprovable_shell_lines(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(allow=["shell_execute", "file_write", "mcp__fs"], mode="plan")
    for tool, args in [
        ("file_write", {"path": "a", "content": ""}),
        ("file_edit", {"path": "a"}),
        ("file_delete", {"path": "a"}),
        ("mcp__fs__write_file", {"path": "a"}),
    ]:
        decision = policy.check(tool, args, tmp_path)
        assert decision is not None and not decision.approved, tool
    for line in (
        "echo $(rm -rf x)",
        "cat a > b",
        "ls; rm x",
        'python -c \'open("x","w")\'',
        "eval ls",
        "git status && git commit -am x",
        "tee out.txt",
        "find . -exec rm {} ;",
        "xargs rm",
    ):
        decision = policy.check("shell_execute", {"command": line}, tmp_path)
        assert decision is not None and not decision.approved, line
    for line in ("ls -la", "git diff", "grep -rn foo .", "cat README.md | head -3"):
        decision = policy.check("shell_execute", {"command": line}, tmp_path)
        assert decision is not None and decision.approved, line
    assert policy.check("exit_plan_mode", {"plan": "x"}, tmp_path) is None  # always a person's question
    policy.set_mode("auto")
    decision = policy.check("exit_plan_mode", {"plan": "x"}, tmp_path)
    assert decision is not None and not decision.approved


# -- through the CLI: headless --mode plan, resume keeps the mode ------------------------------------


def cli_task(workspace: Path, home: Path, script: Path, *flags: str):  # type: ignore[no-untyped-def]
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            *flags,
        ],
        home=home,
    )


def test_headless_plan_run_prints_the_plan_and_resume_stays_in_plan_mode(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]}, {"text": "That is the plan."}],
    )
    run = cli_task(workspace, monkey_home, script, "--mode", "plan", "--task", "greet")
    assert run.returncode == 0, run.stderr
    [saved] = run.of_type("plan_saved")
    assert saved["outcome"] == "recorded" and saved["plan"] == PLAN
    sid = run.of_type("session_started")[0]["session_id"]
    assert run.of_type("session_started")[0]["mode"] == "plan"
    text = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--mode",
            "plan",
            "--task",
            "greet",
        ],
        home=monkey_home,
    )
    assert "plan (recorded; nobody approved it, so the session stays in plan mode):" in text.stdout
    assert "  1. Write `hello.txt` with a greeting." in text.stdout
    # resumed without --mode: still in plan mode, so the write is refused
    again = write_script(
        tmp_path / "again.json",
        [{"tool_calls": [{"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}]}, {"text": "no"}],
    )
    resumed = cli_task(workspace, monkey_home, again, "--resume", sid, "--task", "write it")
    assert resumed.returncode == 4, resumed.stderr
    assert resumed.of_type("session_started")[0]["mode"] == "plan"
    assert "plan mode is read-only" in resumed.of_type("tool_result")[0]["output"]
    assert not (workspace / "x.txt").exists()
    # --mode on the command line wins over the stored one
    again = write_script(
        tmp_path / "again.json",
        [{"tool_calls": [{"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}]}, {"text": "ok"}],
    )
    pinned = cli_task(workspace, monkey_home, again, "--resume", sid, "--mode", "accept-edits", "--task", "write it")
    assert pinned.returncode == 0, pinned.stderr
    assert (workspace / "x.txt").exists()
    with sqlite3.connect(monkey_home / "monkey.db") as conn:
        kinds = [kind for kind, _ in stored_events(conn, sid)]
    assert "plan_saved" in kinds
    exported = invoke(["sessions", "export", sid, "--format", "markdown"], home=monkey_home)
    assert "## Plan (recorded (nobody to approve it))\n\n# Plan\n\n1. Write `hello.txt`" in exported.stdout


def test_approve_plan_flag_goes_on_headless(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
            {"text": "done"},
        ],
    )
    run = cli_task(workspace, monkey_home, script, "--mode", "plan", "--approve-plan", "accept-edits", "--task", "g")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert [e["mode"] for e in run.of_type("mode_changed")] == ["accept-edits"]
    bad = cli_task(workspace, monkey_home, script, "--approve-plan", "auto", "--task", "g")
    assert bad.returncode == 2 and "--approve-plan" in bad.stderr


async def test_plan_mode_survives_compaction(workspace: Path) -> None:
    from monkey.context.window import ContextManager

    turns = [
        ScriptTurn(text="looked " * 200),
        ScriptTurn(text="looked again " * 200),
        ScriptTurn(text="and more"),
        ScriptTurn(text="Summary: looked around."),
        write(),
        ScriptTurn(text="no"),
    ]
    backend = ScriptedBackend(Script(turns=turns, context_window=100_000))
    agent = Agent(
        backend=backend,
        workspace=workspace,
        approver=AnsweringApprover(),
        policy=ApprovalPolicy(mode="plan"),
        context=ContextManager(backend),
    )
    for prompt in ("look", "look again", "look more"):
        await run(agent, prompt)
    made: list[Event] = []
    result = await agent.context.compact(agent, made.append, trigger="manual")  # type: ignore[union-attr]
    assert result is not None and any(e.type == "context_compacted" for e in made)
    events = await run(agent, "now write")
    assert "plan mode is read-only" in of(events, "tool_result")[0].output
    last = backend.requests[-1]
    assert "# Plan mode" in last.system and "exit_plan_mode" in [t.name for t in last.tools]
    assert msgspec.json.encode(last.messages).count(b"Summary: looked around.") == 1


async def test_a_sub_agent_of_a_planning_parent_is_not_offered_exit_plan_mode(
    workspace: Path, monkey_home: Path
) -> None:
    from monkey.agent.agent_defs import discover_agents
    from monkey.agent.subagents import Delegation, install_task_tool

    script = msgspec.convert(
        {
            "turns": [
                {
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {"description": "look", "prompt": "look around", "agent": "explore"},
                        }
                    ]
                },
                {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]},
                {"text": "ok"},
            ],
            "agents": {"explore": {"turns": [{"text": "found it"}]}},
        },
        Script,
    )
    approver = AnsweringApprover(reject_plan())
    agent = Agent(
        backend=ScriptedBackend(script), workspace=workspace, approver=approver, policy=ApprovalPolicy(mode="plan")
    )
    install_task_tool(agent, Delegation(discover_agents(workspace, home=monkey_home, trusted=True)))
    events = await run(agent)
    child = agent.backend.fork("explore", 9)  # type: ignore[attr-defined]
    assert "exit_plan_mode" not in [t.name for t in child.requests[0].tools]
    assert "exit_plan_mode" in [t.name for t in agent.backend.requests[-1].tools]  # type: ignore[attr-defined]
    assert [e.outcome for e in of(events, "plan_saved")] == ["rejected"] and len(approver.requests) == 1
