"""The Think/Plan/Do/Reflect workflow: real subprocess runs with the scripted backend, a real git
workspace and a real verify command, and in-process runs for what each stage is offered."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.agent.plan_mode import reject_plan
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.config import WorkflowConfig
from monkey.workflow.stages import parse_verdict
from monkey.workflow.runner import Workflow
from tests.support.cli import invoke, stored_events, write_script
from tests.support.fakes.approvers import AnsweringApprover
from tests.support.script import call_turn


LOOPING = [
    call_turn("file_read", path="README.md"),
    {"text": "Found the README; hello.txt is missing."},  # think
    call_turn("exit_plan_mode", plan="1. Write hello.txt"),
    {"text": "Proposed."},  # plan 1
    call_turn("file_write", path="hello.txt", content="hi\n"),
    {"text": "Wrote hello.txt."},  # do 1
    {"text": "It says hi.\nVERDICT: not done\nREASON: hello.txt does not say hello"},  # reflect 1
    call_turn("exit_plan_mode", plan="1. Put hello in hello.txt"),
    {"text": "Proposed again."},  # plan 2
    call_turn("file_edit", path="hello.txt", old_string="hi", new_string="hello"),
    {"text": "Fixed."},  # do 2
    {"text": "VERDICT: done\nREASON: the verify command passes"},  # reflect 2
]


def workflow_run(
    workspace: Path,
    home: Path,
    tmp_path: Path,
    turns: list[dict[str, Any]],
    *flags: str,
    verify: str = "grep -q hello hello.txt",
    retries: int = 2,
):  # type: ignore[no-untyped-def]
    (home / "config.toml").write_text(f'[workflow]\nverify = "{verify}"\nverify_retries = {retries}\n')
    script = write_script(tmp_path / "script.json", turns)
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
            "--workflow",
            "tpdr",
            "--task",
            "greet in hello.txt",
            *flags,
        ],
        home=home,
    )


def test_a_workflow_loops_once_after_a_failing_verify_and_traces_every_stage(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    run = workflow_run(workspace, monkey_home, tmp_path, LOOPING, "--approve-plan", "accept-edits")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hello\n"
    started = [(e["stage"], e["iteration"]) for e in run.of_type("stage_started")]
    assert started == [("think", 1), ("plan", 1), ("do", 1), ("reflect", 1), ("plan", 2), ("do", 2), ("reflect", 2)]
    completed = run.of_type("stage_completed")
    reflects = [e for e in completed if e["stage"] == "reflect"]
    assert [(e["verdict"], e["handoff"]["verify_ok"]) for e in reflects] == [("not_done", False), ("done", True)]
    assert reflects[0]["reason"] == "hello.txt does not say hello"
    assert all(e["input_tokens"] > 0 and e["wall_s"] >= 0 for e in completed)
    do_1 = next(e for e in completed if e["stage"] == "do")
    assert do_1["handoff"]["files_changed"] == ["hello.txt"]
    # the verify command ran as the person's own, through the loop (a tool call and its result, stored)
    verify = [e for e in run.of_type("tool_result") if e["name"] == "shell_execute"]
    assert [e["ok"] for e in verify] == [False, True]
    # Think and Reflect ran read-only; Do in the mode the approved plan chose; the mode is given back
    modes = [e["mode"] for e in run.of_type("mode_changed")]
    assert modes[0] == "plan" and "accept-edits" in modes and modes[-1] == "default"
    # Reflect was given the iteration's diff
    workflow_id = completed[0]["workflow_id"]
    # the trace: one line per stage, in order, with the same numbers
    trace = monkey_home / "workflows" / f"{workflow_id}.jsonl"
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(line["stage"], line["iteration"]) for line in lines] == started
    assert [line["input_tokens"] for line in lines] == [e["input_tokens"] for e in completed]
    assert lines[3]["verdict"] == "not_done" and lines[-1]["verdict"] == "done"
    # stored like every event
    sid = run.of_type("session_started")[0]["session_id"]
    with sqlite3.connect(monkey_home / "monkey.db") as conn:
        kinds = [kind for kind, _ in stored_events(conn, sid)]
    assert kinds.count("stage_started") == 7 and kinds.count("stage_completed") == 7
    # monkey workflows show prints it as a table
    shown = invoke(["workflows", "show", workflow_id[:8]], home=monkey_home)
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()
    assert rows[0].startswith(f"workflow {workflow_id} · session {sid} · 7 stages")
    assert rows[1].split()[:4] == ["#", "stage", "iter", "outcome"]
    assert [r.split()[1] for r in rows[3:10]] == ["think", "plan", "do", "reflect", "plan", "do", "reflect"]
    assert "not_done — hello.txt does not say hello" in rows[6] and rows[-1].split()[0] == "total"
    listed = invoke(["workflows", "list"], home=monkey_home)
    assert listed.stdout.startswith(workflow_id)


def test_a_failing_verify_is_fed_back_at_most_n_times(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    turns = [
        call_turn("file_read", path="README.md"),
        {"text": "Read it."},
        call_turn("exit_plan_mode", plan="1. Write it"),
        {"text": "Proposed."},
        call_turn("file_write", path="hello.txt", content="hi\n"),
        {"text": "Done."},
        {"text": "VERDICT: done\nREASON: looks right"},  # the verify command says otherwise
        call_turn("exit_plan_mode", plan="1. Try again"),
        {"text": "Proposed."},
        {"text": "Nothing to change."},
        {"text": "VERDICT: done\nREASON: still looks right"},
    ]
    run = workflow_run(workspace, monkey_home, tmp_path, turns, "--approve-plan", "accept-edits", retries=1)
    assert run.returncode == 3, run.stderr
    assert "verify_failed" in run.stderr and "still failed after 1 retries" in run.stderr
    reflects = [e for e in run.of_type("stage_completed") if e["stage"] == "reflect"]
    assert [e["verdict"] for e in reflects] == ["not_done", "not_done"]
    assert reflects[0]["reason"].startswith("the verify command failed (Reflect said: looks right)")
    plans = [e for e in run.of_type("stage_started") if e["stage"] == "plan"]
    assert len(plans) == 2


def test_bad_workflow_flags_are_usage_errors(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    base = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)]
    bad = invoke([*base, "--workflow", "nope", "--task", "x"], home=monkey_home)
    assert bad.returncode == 2 and "unknown workflow 'nope': expected one of tpdr" in bad.stderr
    no_task = invoke([*base, "--workflow", "tpdr"], home=monkey_home)
    assert no_task.returncode == 2 and "the task is empty" in no_task.stderr  # stdin is empty here
    missing = invoke(["workflows", "show", "wf-nope"], home=monkey_home)
    assert missing.returncode == 1 and "no workflow 'wf-nope'" in missing.stderr and not missing.stdout
    (monkey_home / "config.toml").write_text("[workflow]\nverify = 3\n")
    typed = invoke([*base, "--workflow", "tpdr", "--task", "x"], home=monkey_home)
    assert typed.returncode == 2 and "workflow.verify" in typed.stderr


# -- in process: what each stage is offered, a rejected plan ------------------------------------------


def script_turns(turns: list[dict[str, Any]]) -> list[ScriptTurn]:
    return [
        ScriptTurn(text=t.get("text", ""), tool_calls=[ScriptCall(**c) for c in t.get("tool_calls", [])]) for t in turns
    ]


async def test_each_stage_has_its_own_tools_prompt_and_mode(workspace: Path, monkey_home: Path) -> None:
    from monkey.agent.plan_mode import approve_plan

    backend = ScriptedBackend(Script(turns=script_turns(LOOPING[:7])))
    agent = Agent(
        backend=backend,
        workspace=workspace,
        approver=AnsweringApprover(approve_plan("accept-edits")),
        policy=ApprovalPolicy(mode="default"),
    )
    flow = Workflow(agent, "greet in hello.txt", settings=WorkflowConfig(verify="", max_iterations=1), home=monkey_home)
    events = [e async for e in flow.run()]
    think, _, plan, _, do, _, reflect = backend.requests
    names = [[t.name for t in r.tools] for r in (think, plan, do, reflect)]
    assert "file_write" not in names[0] and "exit_plan_mode" not in names[0] and "file_read" in names[0]
    assert "exit_plan_mode" in names[1] and "file_write" not in names[1]
    assert "file_write" in names[2] and "exit_plan_mode" not in names[2]
    assert names[3] == names[0]
    assert "# Plan mode" in think.system and "# Plan mode" not in do.system
    assert "Workflow stage: Think" in think.messages[-1].content
    assert "Workflow stage: Do" in do.messages[-1].content and "1. Write hello.txt" in do.messages[-1].content
    assert "Workflow stage: Reflect" in reflect.messages[-1].content and "+hi" in reflect.messages[-1].content
    assert flow.outcome == "not_done" and "after 1 iterations" in flow.reason
    assert agent.policy.mode == "default" and agent.tools.find("file_write") is not None  # given back
    assert events[-1].type == "mode_changed" and events[-1].mode == "default"


async def test_a_rejected_plan_ends_the_workflow_before_do(workspace: Path, monkey_home: Path) -> None:
    backend = ScriptedBackend(Script(turns=script_turns(LOOPING[:4])))
    agent = Agent(backend=backend, workspace=workspace, approver=AnsweringApprover(reject_plan()))
    flow = Workflow(agent, "greet", home=monkey_home)
    events = [e async for e in flow.run()]
    assert flow.outcome == "rejected" and flow.exit_code == 4
    assert [e.stage for e in events if e.type == "stage_started"] == ["think", "plan"]
    assert not (workspace / "hello.txt").exists()


def test_the_verdict_is_read_from_reflects_last_lines() -> None:
    assert parse_verdict("ok\nVERDICT: done\nREASON: tests pass") == ("done", "tests pass")
    assert parse_verdict("**Verdict:** not done\nReason: the flag is missing") == ("not_done", "the flag is missing")
    assert parse_verdict("VERDICT: not_done") == ("not_done", "Reflect said it is not done")
    assert parse_verdict("I think it is done.") == ("not_done", "Reflect gave no verdict")


def test_the_runs_budget_ends_the_workflow_between_stages(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    run = workflow_run(workspace, monkey_home, tmp_path, LOOPING, "--approve-plan", "accept-edits", "--max-turns", "3")
    assert run.returncode == 5, run.stderr  # the budget's exit status
    assert [e["stage"] for e in run.of_type("stage_started")] == ["think", "plan"]
    assert run.of_type("stage_completed")[-1]["outcome"] == "budget"
    [reached] = run.of_type("budget_reached")
    assert reached["budget"] == "max_turns" and reached["limit"] == 3
    assert "workflow" in run.stderr and "budget" in run.stderr
    assert not (workspace / "hello.txt").exists()
