"""Hooks as a person writes them: real shell scripts run at tool calls, prompts and stops, with
Claude Code's input and output; decisions go through the permission engine."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import init_git_workspace, run_monkey, write_script


def _hook(tmp: Path, name: str, body: str) -> str:
    path = tmp / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _config(home: Path, tables: str) -> None:
    (home / "config.toml").write_text(tables)


def _table(event: str, command: str, matcher: str = "", timeout: float = 30) -> str:
    return (f"[[hooks.{event}]]\nmatcher = {json.dumps(matcher)}\n"
            f"hooks = [{{ type = \"command\", command = {json.dumps(command)}, timeout = {timeout} }}]\n")


def _run(ws: Path, home: Path, tmp: Path, turns: list[dict], *flags: str):  # type: ignore[no-untyped-def]
    script = write_script(tmp / "script.json", turns)
    return run_monkey(["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(ws),
                       "--output-format", "stream-json", *flags, "--task", "do it"], home=home)


def _write(path: str, content: str = "x\n") -> dict:
    return {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": content}}]}


def test_pre_tool_use_sees_the_call_and_can_deny_allow_or_rewrite(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    seen = tmp_path / "seen.jsonl"
    gate = _hook(tmp_path, "gate", f"""input=$(cat)
printf '%s\\n' "$input" >> {seen}
case "$input" in
  *secret.txt*) echo "no secrets here" >&2; exit 2 ;;
  *allowed.txt*) echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "allow"}}}}' ;;
  *rewrite.txt*) echo '{{"permissionDecision": "allow", "updatedInput": {{"path": "rewritten.txt", "content": "new\\\\n"}}}}' ;;
esac
""")
    _config(monkey_home, _table("PreToolUse", gate, matcher="file_write|file_edit"))
    run = _run(ws, monkey_home, tmp_path, [_write("secret.txt"), _write("allowed.txt"), _write("rewrite.txt"),
                                            _write("asked.txt"), {"text": "done"}])
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
    allow = _hook(tmp_path, "allow", "cat >/dev/null; echo '{\"permissionDecision\": \"allow\"}'\n")
    _config(monkey_home, _table("PreToolUse", allow) + '[approvals]\ndeny = ["file_write(denied/**)"]\n')
    run = _run(ws, monkey_home, tmp_path, [
        _write("denied/a.txt"),
        {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch .git/hooks/x"}}]},
        {"text": "done"}])
    results = run.of_type("tool_result")
    assert not results[0]["ok"] and "denied by rule" in results[0]["output"]
    assert not results[1]["ok"] and not (ws / ".git" / "hooks" / "x").exists()


def test_hooks_that_cannot_start_time_out_or_fail_are_said_and_monkey_goes_on(
        tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    slow = _hook(tmp_path, "slow", "sleep 30\n")
    broken = _hook(tmp_path, "broken", "echo 'oops' >&2; exit 3\n")
    plain = tmp_path / "not-executable.sh"
    plain.write_text("#!/bin/sh\nexit 2\n")
    _config(monkey_home, _table("PreToolUse", str(tmp_path / "missing.sh")) + _table("PreToolUse", str(plain))
            + _table("PreToolUse", slow, timeout=0.5) + _table("PreToolUse", broken)
            + _table("PreToolUse", "cat >/dev/null; echo '{not json'"))
    run = _run(ws, monkey_home, tmp_path, [_write("a.txt"), {"text": "done"}], "--no-approval")
    ran = run.of_type("hook_ran")
    assert [r["outcome"] for r in ran] == ["not_started", "not_started", "timeout", "warning", "warning"]
    assert "could not start" in ran[0]["message"] and "timed out" in ran[2]["message"]
    assert "exit 3: oops" in ran[3]["message"] and "not valid JSON" in ran[4]["message"]
    assert (ws / "a.txt").exists(), "none of them is a block: the call ran"


def test_post_tool_use_prompt_and_stop_hooks(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    post = _hook(tmp_path, "post", "cat >/dev/null; echo '{\"additionalContext\": \"remember to run make lint\"}'\n")
    prompt = _hook(tmp_path, "prompt", "cat >/dev/null; echo '{\"additionalContext\": \"the branch is frozen\"}'\n")
    count = tmp_path / "stops"
    stop = _hook(tmp_path, "stop", f"cat >/dev/null; echo x >> {count}; echo 'tests are not run yet' >&2; exit 2\n")
    _config(monkey_home, _table("PostToolUse", post) + _table("UserPromptSubmit", prompt) + _table("Stop", stop))
    run = _run(ws, monkey_home, tmp_path, [_write("a.txt"), {"text": "done"}, {"text": "done"},
                                            {"text": "done"}, {"text": "done"}], "--no-approval")
    assert run.returncode == 0, run.stderr
    [result] = run.of_type("tool_result")
    assert "remember to run make lint" in result["output"]
    assert len(count.read_text().splitlines()) == 4, "sent back three times at most, then the turn ends"
    lines = [json.loads(x) for x in run_monkey(["sessions", "export", run.events[0]["session_id"]],
                                               home=monkey_home).stdout.splitlines()]
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
