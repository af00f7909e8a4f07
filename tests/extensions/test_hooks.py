"""Hooks as a person writes them: real shell scripts run at tool calls, prompts and stops, with
Claude Code's input and output; decisions go through the permission engine."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from tests.support.cli import init_git_workspace, invoke, write_script


def _hook(tmp: Path, name: str, body: str) -> str:
    path = tmp / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _config(home: Path, tables: str) -> None:
    # these hooks log beside the workspace: the person trusts their own commands outside the sandbox
    # (tests/cli/test_sandbox_trusted.py has hooks in the sandbox)
    (home / "config.toml").write_text('[shell]\ntrusted_commands = "outside"\n' + tables)


def _table(event: str, command: str, matcher: str = "", timeout: float = 30) -> str:
    return (
        f"[[hooks.{event}]]\nmatcher = {json.dumps(matcher)}\n"
        f'hooks = [{{ type = "command", command = {json.dumps(command)}, timeout = {timeout} }}]\n'
    )


def _run(ws: Path, home: Path, tmp: Path, turns: list[dict], *flags: str):  # type: ignore[no-untyped-def]
    script = write_script(tmp / "script.json", turns)
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            *flags,
            "--task",
            "do it",
        ],
        home=home,
    )


def _write(path: str, content: str = "x\n") -> dict:
    return {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": content}}]}


def test_pre_tool_use_sees_the_call_and_can_deny_allow_or_rewrite(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    seen = tmp_path / "seen.jsonl"
    gate = _hook(
        tmp_path,
        "gate",
        f"""input=$(cat)
printf '%s\\n' "$input" >> {seen}
case "$input" in
  *secret.txt*) echo "no secrets here" >&2; exit 2 ;;
  *allowed.txt*) echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "allow"}}}}' ;;
  *rewrite.txt*) echo '{{"permissionDecision": "allow", "updatedInput": {{"path": "rewritten.txt", "content": "new\\\\n"}}}}' ;;
esac
""",
    )
    _config(monkey_home, _table("PreToolUse", gate, matcher="file_write|file_edit"))
    run = _run(
        ws,
        monkey_home,
        tmp_path,
        [_write("secret.txt"), _write("allowed.txt"), _write("rewrite.txt"), _write("asked.txt"), {"text": "done"}],
    )
    first = json.loads(seen.read_text().splitlines()[0])
    assert first["hook_event_name"] == "PreToolUse" and first["tool_name"] == "file_write"
    assert first["tool_input"] == {"path": "secret.txt", "content": "x\n"} and first["cwd"] == str(ws)
    results = run.of_type("tool_result")
    assert "denied by a hook: no secrets here" in results[0]["output"] and not (ws / "secret.txt").exists()
    assert results[1]["ok"] and (ws / "allowed.txt").exists(), "a hook's allow stands for the person (headless)"
    assert results[2]["ok"], results[2]["output"]
    assert (ws / "rewritten.txt").read_text() == "new\n" and not (ws / "rewrite.txt").exists()
    assert not results[3]["ok"] and not (ws / "asked.txt").exists(), "no answer from the hook: asked, headless refuses"
    outcomes = [e["outcome"] for e in run.of_type("hook_ran")]
    assert outcomes == ["block", "allow", "allow", "ok"]


def test_a_hooks_allow_never_beats_a_deny_rule_or_a_protected_path(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    allow = _hook(tmp_path, "allow", 'cat >/dev/null; echo \'{"permissionDecision": "allow"}\'\n')
    _config(monkey_home, _table("PreToolUse", allow) + '[approvals]\ndeny = ["file_write(denied/**)"]\n')
    run = _run(
        ws,
        monkey_home,
        tmp_path,
        [
            _write("denied/a.txt"),
            {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch .git/hooks/x"}}]},
            {"text": "done"},
        ],
    )
    results = run.of_type("tool_result")
    assert not results[0]["ok"] and "denied by rule" in results[0]["output"]
    assert not results[1]["ok"] and not (ws / ".git" / "hooks" / "x").exists()


def test_hooks_that_cannot_start_time_out_or_fail_are_said_and_monkey_goes_on(
    tmp_path: Path, monkey_home: Path
) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    slow = _hook(tmp_path, "slow", "sleep 30\n")
    broken = _hook(tmp_path, "broken", "echo 'oops' >&2; exit 3\n")
    plain = tmp_path / "not-executable.sh"
    plain.write_text("#!/bin/sh\nexit 2\n")
    _config(
        monkey_home,
        _table("PreToolUse", str(tmp_path / "missing.sh"))
        + _table("PreToolUse", str(plain))
        + _table("PreToolUse", slow, timeout=0.5)
        + _table("PreToolUse", broken)
        + _table("PreToolUse", "cat >/dev/null; echo '{not json'"),
    )
    run = _run(ws, monkey_home, tmp_path, [_write("a.txt"), {"text": "done"}], "--no-approval")
    ran = run.of_type("hook_ran")
    assert [r["outcome"] for r in ran] == ["not_started", "not_started", "timeout", "warning", "warning"]
    assert "could not start" in ran[0]["message"] and "timed out" in ran[2]["message"]
    assert "exit 3: oops" in ran[3]["message"] and "not valid JSON" in ran[4]["message"]
    assert (ws / "a.txt").exists(), "none of them is a block: the call ran"


def test_post_tool_use_prompt_and_stop_hooks(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    post = _hook(tmp_path, "post", 'cat >/dev/null; echo \'{"additionalContext": "remember to run make lint"}\'\n')
    prompt = _hook(tmp_path, "prompt", 'cat >/dev/null; echo \'{"additionalContext": "the branch is frozen"}\'\n')
    count = tmp_path / "stops"
    stop = _hook(tmp_path, "stop", f"cat >/dev/null; echo x >> {count}; echo 'tests are not run yet' >&2; exit 2\n")
    _config(monkey_home, _table("PostToolUse", post) + _table("UserPromptSubmit", prompt) + _table("Stop", stop))
    run = _run(
        ws,
        monkey_home,
        tmp_path,
        [_write("a.txt"), {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    [result] = run.of_type("tool_result")
    assert "remember to run make lint" in result["output"]
    assert len(count.read_text().splitlines()) == 4, "sent back three times at most, then the turn ends"
    lines = [
        json.loads(x)
        for x in invoke(["sessions", "export", run.events[0]["session_id"]], home=monkey_home).stdout.splitlines()
    ]
    assert any(e["type"] == "turn_started" for e in lines)
    blocked = _hook(tmp_path, "blocked", "cat >/dev/null; echo 'not on Fridays' >&2; exit 2\n")
    _config(monkey_home, _table("UserPromptSubmit", blocked))
    refused = _run(ws, monkey_home, tmp_path, [_write("b.txt"), {"text": "done"}], "--no-approval")
    done = refused.of_type("turn_completed")[0]
    assert done["reason"] == "denied" and "not on Fridays" in done["message"] and not (ws / "b.txt").exists()


def test_a_bad_hooks_table_is_a_clear_error(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    _config(monkey_home, "[[hooks.PreToolUs]]\nhooks = []\n")
    run = _run(ws, monkey_home, tmp_path, [{"text": "done"}])
    assert run.returncode == 2 and "unknown event 'PreToolUs'" in run.stderr and "Traceback" not in run.stderr


def test_session_start_and_end_hooks_with_their_source_and_reason(tmp_path: Path, monkey_home: Path) -> None:
    import sqlite3

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "log.jsonl"
    record = f"input=$(cat); printf '%s\\n' \"$input\" >> {log}\n"
    start = _hook(tmp_path, "start", record + "echo 'The build is broken on main since Monday.'\n")
    resume = _hook(tmp_path, "resume", record + 'echo \'{"hookSpecificOutput": {"additionalContext": "resumed!"}}\'\n')
    end = _hook(tmp_path, "end", record)
    _config(
        monkey_home,
        _table("SessionStart", start, matcher="startup")
        + _table("SessionStart", resume, matcher="resume")
        + _table("SessionEnd", end),
    )
    first = _run(ws, monkey_home, tmp_path, [{"text": "ok"}])
    assert first.returncode == 0, first.stderr
    kinds = [e["type"] for e in first.events]
    assert kinds[-2:] == ["hook_ran", "session_ended"], "SessionEnd runs (and is stored) before the end"
    again = _run(ws, monkey_home, tmp_path, [{"text": "ok"}], "--continue")
    assert again.returncode == 0, again.stderr
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(s["hook_event_name"], s.get("source", s.get("reason"))) for s in seen] == [
        ("SessionStart", "startup"),
        ("SessionEnd", "other"),
        ("SessionStart", "resume"),
        ("SessionEnd", "other"),
    ]
    with sqlite3.connect(monkey_home / "monkey.db") as db:
        prompts = [r[0] for r in db.execute("SELECT data FROM nodes WHERE kind = 'user' AND in_context ORDER BY seq")]
    assert b"The build is broken on main since Monday." in prompts[0], "plain stdout is context for the model"
    assert b"resumed!" in prompts[1] and b"broken" not in prompts[1]


@contextlib.asynccontextmanager
async def _open_session(agent):  # type: ignore[no-untyped-def]
    """A stored session around ``agent`` (ended on the way out), and the events it showed."""
    from monkey.session.session import Session
    from tests.support.agent import ListSink

    events = ListSink()
    session = Session(agent, switcher=None, show=events, tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        yield session, events
    finally:
        await session.end()


async def test_pre_compact_and_notification_hooks(tmp_path: Path) -> None:
    from monkey.permissions.requests import ApprovalRequest, Decision
    from monkey.extensions.hooks import Hooks, parse_hooks
    from monkey.backends.scripted import ScriptCall, ScriptTurn
    from tests.support.agent import make_agent

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "log.jsonl"
    record = _hook(tmp_path, "record", f"cat >> {log}; echo >> {log}\n")
    stop = _hook(tmp_path, "stop", "cat >/dev/null; echo 'not now' >&2; exit 2\n")
    table = {
        "PreCompact": [{"matcher": "manual", "hooks": [{"command": record}, {"command": stop}]}],
        "Notification": [{"matcher": "permission_prompt", "hooks": [{"command": record}]}],
    }

    class Person:
        async def decide(self, request: ApprovalRequest) -> Decision:
            assert log.read_text().count("Notification") == 1, "the person's tools heard before the question"
            return Decision(approved=True, by="user", reason="fine")

    write = ScriptCall(id="w1", name="file_write", arguments={"path": "a.txt", "content": "x\n" * 400})
    agent = make_agent(
        ws,
        [
            ScriptTurn(text="", tool_calls=[write]),
            ScriptTurn(text="wrote it"),
            ScriptTurn(text="more"),
            ScriptTurn(text="Summary: a.txt was written."),
        ],
    )
    agent.options.hooks = Hooks(parse_hooks(table), ws)
    agent.approver = Person()
    async with _open_session(agent) as (session, events):
        await session.send("write a.txt")
        await session.send("and more")
        await session.command("/compact")
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [s["hook_event_name"] for s in seen] == ["Notification", "PreCompact"]
    assert seen[0]["message"] == "monkey needs your permission to use file_write"
    assert seen[1]["trigger"] == "manual"
    assert (ws / "a.txt").exists()
    assert any(getattr(e, "type", "") == "context_compacted" for e in events), "a PreCompact hook cannot stop it"


async def test_session_start_runs_again_after_a_compaction_and_after_clear(tmp_path: Path) -> None:
    from monkey.extensions.hooks import Hooks, parse_hooks
    from monkey.backends.scripted import ScriptTurn
    from tests.support.agent import make_agent

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "log.jsonl"
    record = f"input=$(cat); printf '%s\\n' \"$input\" >> {log}\n"
    again = _hook(tmp_path, "again", record + "echo 'Never push to main.'\n")
    table = {"SessionStart": [{"matcher": "compact|clear", "hooks": [{"command": again}]}]}
    agent = make_agent(
        ws,
        [
            ScriptTurn(text="one " * 200),
            ScriptTurn(text="two " * 200),
            ScriptTurn(text="Summary: two answers."),
            ScriptTurn(text="three"),
            ScriptTurn(text="four"),
        ],
    )
    agent.options.hooks = Hooks(parse_hooks(table), ws)
    async with _open_session(agent) as (session, events):
        await session.send("first")
        await session.send("second")
        await session.command("/compact")
        summary = agent.messages[0].content
        await session.send("third")
        await session.command("/clear")
        await session.send("fourth")
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(s["hook_event_name"], s["source"]) for s in seen] == [
        ("SessionStart", "compact"),
        ("SessionStart", "clear"),
    ]
    assert "Summary: two answers." in summary
    assert summary.endswith("Never push to main."), "what the hook says goes on with the summary"
    compacted = [e for e in events if getattr(e, "type", "") == "context_compacted"]
    assert compacted and compacted[0].summary == summary, "stored as the model got it: a resume sends it again"
    assert agent.messages[0].role == "user" and agent.messages[0].content.startswith("fourth")
    assert agent.messages[0].content.endswith("Never push to main."), "after /clear, with the next prompt"


async def test_session_start_runs_again_for_a_session_opened_in_the_same_process(tmp_path: Path) -> None:
    from monkey.extensions.hooks import Hooks, parse_hooks
    from monkey.backends.scripted import ScriptTurn
    from tests.support.agent import make_agent

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "log.jsonl"
    record = _hook(tmp_path, "record", f"cat >> {log}; echo >> {log}\n")
    table = {"SessionStart": [{"hooks": [{"command": record}]}]}
    agent = make_agent(ws, [ScriptTurn(text="one"), ScriptTurn(text="two")])
    agent.options.hooks = Hooks(parse_hooks(table), ws)
    async with _open_session(agent) as (session, _):
        await session.send("first")
        first = agent.session_id
        await session.open(resume=first)  # /resume, as the app and the REPL do it
        await session.send("second")
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(s["source"], s["session_id"]) for s in seen] == [("startup", first), ("resume", first)]


async def test_a_sub_agent_runs_subagent_start_and_stop_and_its_calls_run_the_tool_hooks(
    tmp_path: Path, monkey_home: Path
) -> None:
    from monkey.extensions.hooks import Hooks, parse_hooks
    from tests.support.agent import collect, root_agent, task

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    log = tmp_path / "log.jsonl"
    record = _hook(tmp_path, "record", f"cat >> {log}; echo >> {log}\n")
    once = tmp_path / "once"
    not_yet = _hook(
        tmp_path,
        "notyet",
        f"cat >/dev/null; [ -e {once} ] && exit 0; touch {once}; echo 'check the tests first' >&2; exit 2\n",
    )
    table = {
        event: [{"matcher": matcher, "hooks": [{"command": record}]}]
        for event, matcher in (
            ("SubagentStart", "explore"),
            ("PreToolUse", "file_read"),
            ("Stop", ""),
            ("SessionStart", ""),
        )
    }
    table["SubagentStop"] = [{"matcher": "explore", "hooks": [{"command": record}, {"command": not_yet}]}]
    (ws / "notes.txt").write_text("42\n")
    script = {
        "turns": [{"tool_calls": [task("explore", "find it")]}, {"text": "It is 42."}],
        "agents": {
            "explore": {
                "turns": [
                    {"tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}]},
                    {"text": "42, I think."},
                    {"text": "42: the tests agree."},
                ]
            }
        },
    }
    agent = root_agent(ws, monkey_home, script)
    agent.options.hooks = Hooks(parse_hooks(table), ws)
    events = await collect(agent.run_task("what is it?"))
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    names = [(s["hook_event_name"], s.get("agent_type", "")) for s in seen]
    assert names == [
        ("SessionStart", ""),
        ("SubagentStart", "explore"),
        ("PreToolUse", ""),
        ("SubagentStop", "explore"),
        ("SubagentStop", "explore"),
        ("Stop", ""),
    ]
    assert seen[1]["agent_id"] != agent.session_id and seen[2]["session_id"] == seen[1]["agent_id"]
    [done] = [e for e in events if e.type == "subagent_completed"]
    assert done.handoff.summary == "42: the tests agree.", "SubagentStop sent the child back to work once"
