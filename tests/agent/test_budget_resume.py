"""Budgets per session: a resumed session's budget counts what the session (and its sub-agents)
spent in earlier runs (``--budget-scope session``, the default); ``--budget-scope run`` counts
this run only. Real CLI runs on the scripted backend, real SQLite files."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

import pytest

from monkey import events as ev
from monkey.store import Recorder, SessionStore
from monkey.store.spent import Spent, session_spent
from tests.support.cli import Run, invoke, stored_events, write_script

LS = {"name": "list_directory", "arguments": {"path": "."}}
_looks = iter(range(1, 1000))


def look(cost: float = 0.0, tokens: int = 0) -> dict[str, Any]:
    """A scripted model response that lists the folder (and costs ``cost``, uses ``tokens`` in and out);
    each a different spelling of the path, so no two in a row are the same call."""
    call = {"name": "list_directory", "arguments": {"path": "." + "/." * next(_looks)}}
    return {"tool_calls": [call], "usage": {"cost_usd": cost, "input_tokens": tokens, "output_tokens": tokens}}


def answer(text: str = "done", cost: float = 0.0, tokens: int = 0) -> dict[str, Any]:
    return {"text": text, "usage": {"cost_usd": cost, "input_tokens": tokens, "output_tokens": tokens}}


def monkey(workspace: Path, home: Path, script: Path, *flags: str) -> Run:
    """``monkey agent`` on a script, in this process."""
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


def responses(run: Run) -> int:
    return len(run.of_type("message_completed"))


def test_continue_gets_only_the_turns_the_session_has_left(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    first = monkey(
        workspace,
        monkey_home,
        write_script(tmp_path / "a.json", [look(), answer()]),
        "--max-turns",
        "3",
        "--task",
        "one",
    )
    assert first.returncode == 0 and responses(first) == 2, first.stderr
    more = write_script(tmp_path / "b.json", [look(), look(), look(), answer()])
    again = monkey(workspace, monkey_home, more, "--continue", "--max-turns", "3", "--task", "two")
    assert again.returncode == 5, again.stderr
    assert responses(again) == 1, "3 turns for the session, 2 of them spent before"
    [reached] = again.of_type("budget_reached")
    assert (reached["budget"], reached["used"], reached["limit"]) == ("max_turns", 3, 3)
    assert (reached["scope"], reached["earlier"]) == ("session", 2)
    assert "budget max_turns reached: 3 of 3 model responses in this session (2 before this run)" in again.stderr
    # used up: the next resume stops before its first model call
    done = monkey(workspace, monkey_home, more, "--continue", "--max-turns", "3", "--task", "three")
    assert done.returncode == 5 and responses(done) == 0, done.stderr
    assert [e["earlier"] for e in done.of_type("budget_reached")] == [3]
    # counting this run only, a resume gets 3 fresh turns
    fresh = monkey(
        workspace, monkey_home, more, "--continue", "--max-turns", "3", "--budget-scope", "run", "--task", "four"
    )
    assert fresh.returncode == 5 and responses(fresh) == 3, fresh.stderr
    assert [(e["scope"], e["earlier"]) for e in fresh.of_type("budget_reached")] == [("run", 0)]


def test_continue_counts_the_dollars_spent_before(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    first = monkey(
        workspace,
        monkey_home,
        write_script(tmp_path / "a.json", [look(0.1), answer(cost=0.1)]),
        "--max-budget-usd",
        "0.25",
        "--task",
        "one",
    )
    assert first.returncode == 0, first.stderr
    more = write_script(tmp_path / "b.json", [look(0.1), look(0.1), answer()])
    again = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(more),
            "--cwd",
            str(workspace),
            "--continue",
            "--max-budget-usd",
            "0.25",
            "--output-format",
            "json",
            "--task",
            "two",
        ],
        home=monkey_home,
    )
    assert again.returncode == 5, again.stderr
    out = json.loads(again.stdout)
    assert out["subtype"] == "error_max_budget_usd" and out["tool_calls"] == 0, "its calls were left unrun"
    assert out["budget"] == {
        "budget": "max_budget_usd",
        "used": 0.3,
        "limit": 0.25,
        "owner": "main",
        "scope": "session",
        "earlier": 0.2,
    }
    assert "$0.3000 of $0.2500 in this session ($0.2000 before this run)" in out["message"]


def test_continue_counts_the_tokens_used_before(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    first = monkey(
        workspace,
        monkey_home,
        write_script(tmp_path / "a.json", [look(tokens=100), answer(tokens=100)]),
        "--max-tokens",
        "500",
        "--task",
        "one",
    )
    assert first.returncode == 0, first.stderr
    more = write_script(tmp_path / "b.json", [look(tokens=100), look(tokens=100), answer()])
    again = monkey(workspace, monkey_home, more, "--continue", "--max-tokens", "500", "--task", "two")
    assert again.returncode == 5 and responses(again) == 1, again.stderr
    [reached] = again.of_type("budget_reached")
    assert (reached["budget"], reached["used"], reached["earlier"]) == ("max_tokens", 600, 400)
    assert not again.of_type("tool_started"), "the response over the budget runs none of its calls"


def test_scope_run_in_config_and_bad_scopes(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "a.json", [look(), answer()])
    assert monkey(workspace, monkey_home, script, "--task", "one").returncode == 0
    more = write_script(tmp_path / "b.json", [look(), look(), answer()])
    (monkey_home / "config.toml").write_text('[budget]\nmax_turns = 3\nscope = "run"\n')
    fresh = monkey(workspace, monkey_home, more, "--continue", "--task", "two")
    assert fresh.returncode == 0 and responses(fresh) == 3, fresh.stderr
    flagged = monkey(workspace, monkey_home, more, "--continue", "--budget-scope", "session", "--task", "three")
    assert flagged.returncode == 5 and responses(flagged) == 0, "the flag is over the config (5 spent of 3)"
    bad = monkey(workspace, monkey_home, more, "--continue", "--budget-scope", "all", "--task", "four")
    assert bad.returncode == 2 and bad.stderr.strip() == "monkey: --budget-scope must be session or run, got 'all'"
    (monkey_home / "config.toml").write_text('[budget]\nscope = "forever"\n')
    bad = monkey(workspace, monkey_home, more, "--continue", "--task", "five")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "monkey: [budget] scope must be session or run, got 'forever'"
    ]


def test_what_sub_agents_spent_counts_for_their_root(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = {"turns": [{"tool_calls": [LS], "usage": {"cost_usd": 0.1}}, {"text": "found", "usage": {"cost_usd": 0.1}}]}
    task = {"name": "task", "arguments": {"description": "find", "prompt": "find it", "agent": "general"}}
    script = write_script(
        tmp_path / "a.json", [{"tool_calls": [task]}, answer("the child found it")], agents={"general": child}
    )
    first = monkey(workspace, monkey_home, script, "--no-approval", "--task", "delegate")
    assert first.returncode == 0 and first.of_type("subagent_completed"), first.stderr
    more = write_script(tmp_path / "b.json", [look(0.05), answer()])
    again = monkey(workspace, monkey_home, more, "--continue", "--max-budget-usd", "0.25", "--task", "again")
    assert again.returncode == 5 and responses(again) == 1, again.stderr
    [reached] = again.of_type("budget_reached")
    assert (reached["used"], reached["earlier"]) == (0.25, 0.2), "the child's $0.20 counts for its parent"
    turns = monkey(workspace, monkey_home, more, "--continue", "--max-turns", "5", "--task", "turns")
    assert turns.returncode == 5 and responses(turns) == 0, "2 of the parent's + 2 of the child's + 1 = 5"


def test_earlier_turns_seconds_count_for_a_wall_clock_budget(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    sleep = {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "sleep 1.2"}}]}
    first = monkey(
        workspace, monkey_home, write_script(tmp_path / "a.json", [sleep, answer()]), "--no-approval", "--task", "wait"
    )
    assert first.returncode == 0, first.stderr
    again = monkey(
        workspace,
        monkey_home,
        write_script(tmp_path / "b.json", [answer()]),
        "--continue",
        "--max-wall",
        "1",
        "--task",
        "again",
    )
    assert again.returncode == 5 and responses(again) == 0, again.stderr
    [reached] = again.of_type("budget_reached")
    assert reached["budget"] == "max_wall" and reached["earlier"] >= 1.2, "the earlier turn took 1.2 s at least"


async def test_session_spent_reads_turns_usage_children_and_each_turns_seconds(monkey_home: Path) -> None:
    """Turn seconds run from turn_started to turn_completed; a turn cut off (monkey killed) counts up
    to its last event, not to the next run's start; children's and grandchildren's spending counts."""

    def at(ts: float, event: ev.Event) -> ev.Event:
        return msgspec.structs.replace(event, ts=ts)

    def started(sid: str) -> ev.SessionStarted:
        return ev.SessionStarted(session_id=sid, workspace="/w", backend="scripted", model="m")

    def usage(sid: str, n: int, cost: float) -> ev.Usage:
        return ev.Usage(session_id=sid, input_tokens=n, output_tokens=n, cost_usd=cost)

    run1 = [
        started("s"),
        ev.TurnStarted(session_id="s", turn=1, prompt="p"),
        ev.MessageCompleted(session_id="s"),
        usage("s", 10, 0.01),
        ev.SubagentStarted(session_id="s", call_id="t1", child_session_id="c", agent="general"),
        started("c"),
        ev.MessageCompleted(session_id="c"),
        usage("c", 100, 0.1),
        ev.SubagentStarted(session_id="c", call_id="t2", child_session_id="g", agent="general"),
        started("g"),
        ev.MessageCompleted(session_id="g"),
        usage("g", 1000, 1.0),
        ev.TurnCompleted(session_id="s", turn=1, reason="completed"),
        ev.SessionEnded(session_id="s", reason="completed"),
    ]
    times1 = [1000, 1000, 1001, 1001, 1002, 1002, 1003, 1003, 1004, 1004, 1005, 1005, 1010, 1011]
    run2 = [
        started("s"),
        ev.TurnStarted(session_id="s", turn=2, prompt="q"),
        ev.MessageCompleted(session_id="s"),
        ev.ToolStarted(session_id="s", call_id="x", name="shell_execute"),
    ]  # killed while it ran
    times2 = [2000, 2000, 2003, 2005]
    run3 = [
        started("s"),
        ev.TurnStarted(session_id="s", turn=3, prompt="r"),
        ev.TurnCompleted(session_id="s", turn=3, reason="cancelled"),
    ]
    times3 = [3000, 3000, 3002]
    async with await SessionStore.open() as store:
        for events, times in ((run1, times1), (run2, times2), (run3, times3)):
            recorder = Recorder(store, "s", restored=await store.load("s") if events is not run1 else None)
            for event, ts in zip(events, times, strict=True):
                await recorder.keep(at(ts, event))
            await recorder.close()
        spent = await session_spent(store, "s")
        assert await session_spent(store, "c") == Spent(
            turns=2, input_tokens=1100, output_tokens=1100, cost_usd=1.1, wall=0.0
        )
    assert (spent.turns, spent.input_tokens, spent.output_tokens) == (4, 1110, 1110)
    assert round(spent.cost_usd, 6) == 1.11
    assert spent.wall == 10 + 5 + 2


@pytest.mark.pty
def test_the_repl_resumed_gets_what_is_left(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    import pexpect

    from tests.support.pty import spawn_repl

    first = monkey(workspace, monkey_home, write_script(tmp_path / "a.json", [look(), answer()]), "--task", "one")
    assert first.returncode == 0, first.stderr
    child = spawn_repl(
        workspace,
        monkey_home,
        write_script(tmp_path / "b.json", [look(), look(), answer("no")]),
        "--continue",
        "--max-turns",
        "3",
    )
    child.expect_exact("resumed session")
    child.expect_exact("›")
    child.sendline("go on")
    child.expect_exact("budget max_turns reached: 3 of 3 model responses in this session (2 before this run)")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    conn = sqlite3.connect(monkey_home / "monkey.db")
    kinds = [kind for kind, _ in stored_events(conn, first.events[0]["session_id"])]
    conn.close()
    assert kinds.count("message_completed") == 3, "one model response in the REPL, then the budget"


async def test_an_editor_loading_a_session_gets_what_is_left(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from tests.support.acp import prompt, start_monkey

    first = await asyncio.to_thread(
        monkey,
        workspace,
        monkey_home,  # in-process, on a loop of its own
        write_script(tmp_path / "a.json", [look(), answer()]),
        "--task",
        "one",
    )
    assert first.returncode == 0, first.stderr
    sid = first.events[0]["session_id"]
    more = write_script(tmp_path / "b.json", [look(), look(), answer("no")])
    async with start_monkey(monkey_home, "--backend", "scripted", "--script", str(more), "--max-turns", "3") as (
        conn,
        client,
        _,
    ):
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        reply = await conn.prompt(session_id=sid, prompt=prompt("go on"))
    assert reply.stop_reason == "end_turn"
    db = sqlite3.connect(monkey_home / "monkey.db")
    stored = stored_events(db, sid)
    db.close()
    assert [kind for kind, _ in stored].count("message_completed") == 3, "one model response, then the budget"
    reached = [json.loads(data) for kind, data in stored if kind == "budget_reached"]
    assert [(e["used"], e["earlier"], e["scope"]) for e in reached] == [(3, 2, "session")]


def test_a_restarted_budget_counts_on_from_the_earlier_spend() -> None:
    from monkey.agent.budget import Budget, Limits

    now = [100.0]
    budget = Budget(Limits(max_wall=10, max_turns=5), clock=lambda: now[0])
    budget.charge(turns=5)
    assert budget.check(starting=True) is not None
    budget.restart(turns=2, wall=4.0)  # another session opened: what it spent, nothing reached
    assert budget.check(starting=True) is None and budget.wall == 4.0 and budget.turns == 2
    budget.start()
    assert budget.deadline() == 106.0, "the timer stops the turn when the session's seconds are up"
    now[0] = 106.0
    over = budget.check()
    assert over is not None and (over.budget, over.used, over.earlier, over.scope) == ("max_wall", 10.0, 4.0, "session")
    assert over.describe() == "budget max_wall reached: 10.0s of 10s in this session (4.0s before this run)"
    assert budget.child(Limits(max_turns=1)).scope == "run", "a sub-agent's own limits count its run"
