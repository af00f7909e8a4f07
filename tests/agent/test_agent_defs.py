"""Sub-agent definitions: where they are read from, what their front matter may say, bad files."""

from __future__ import annotations

from pathlib import Path

from monkey.agent.agent_defs import discover_agents
from monkey.modes import stricter_mode
from tests.support.cli import invoke, write_script


def put(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


def test_built_ins_and_where_definitions_come_from(workspace: Path, monkey_home: Path) -> None:
    put(monkey_home / "agents", "explore", "---\nname: explore\ndescription: my own explorer\n---\nMine.\n")
    put(workspace / ".monkey" / "agents", "fixer", "---\nname: fixer\ndescription: fixes\n---\nFix.\n")
    untrusted = discover_agents(workspace, home=monkey_home, trusted=False)
    assert sorted(untrusted.by_name) == ["explore", "general"], "a project's agents wait for trust"
    assert untrusted.get("explore").description == "my own explorer" and untrusted.get("explore").source == "user"
    trusted = discover_agents(workspace, home=monkey_home, trusted=True)
    assert sorted(trusted.by_name) == ["explore", "fixer", "general"]
    general = trusted.get("general")
    assert general.tools is None and general.allows("mcp__x__y") and general.mode == ""
    assert not trusted.warnings


def test_claude_code_definitions_are_read(workspace: Path, monkey_home: Path) -> None:
    put(
        workspace / ".claude" / "agents",
        "reviewer",
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash(git diff:*)\n"
        "disallowedTools: [Write]\npermissionMode: acceptEdits\nmaxTurns: 7\nmodel: inherit\ncolor: blue\n---\n"
        "You review.\n",
    )
    defs = discover_agents(workspace, home=monkey_home, trusted=True)
    assert not defs.warnings
    r = defs.get("reviewer")
    assert r.tools == ("file_read", "grep_search", "glob_search", "shell_execute")
    assert r.disallowed_tools == ("file_write",) and r.mode == "accept-edits" and r.model == ""
    assert r.limits.max_turns == 7 and r.prompt == "You review."
    assert r.allows("grep_search") and not r.allows("file_write") and not r.allows("task")


def test_globs_servers_and_unknown_keys(workspace: Path, monkey_home: Path) -> None:
    put(
        workspace / ".monkey" / "agents",
        "web",
        "---\nname: web\ndescription: web things\ntools: ['file_*', 'mcp__*']\nmcp_servers: [github]\n"
        "timeout: 30\nmax_budget_usd: 0.25\nflavour: spicy\n---\nWeb.\n",
    )
    defs = discover_agents(workspace, home=monkey_home, trusted=True)
    web = defs.get("web")
    assert web.allows("file_read") and web.allows("mcp__github__issues") and not web.allows("mcp__slack__post")
    assert not web.allows("shell_execute")
    assert (web.limits.max_wall, web.limits.max_budget_usd) == (30, 0.25)
    assert defs.warnings == [f"agent web: {workspace}/.monkey/agents/web.md: unknown key 'flavour' ignored"]


def test_bad_files_are_skipped_saying_why(workspace: Path, monkey_home: Path) -> None:
    folder = workspace / ".monkey" / "agents"
    put(folder, "a", "no front matter\n")
    put(folder, "b", "---\nname: b\n---\nno description\n")
    put(folder, "c", "---\nname: [c\ndescription: x\n---\n")
    put(folder, "d", "---\nname: d\ndescription: d\nmax_turns: lots\n---\n")
    put(folder, "e", "---\nname: e\ndescription: e\nmode: yolo\n---\n")
    defs = discover_agents(workspace, home=monkey_home, trusted=True)
    assert sorted(defs.by_name) == ["explore", "general"]
    said = "\n".join(defs.warnings)
    assert f"{folder}/a.md: no front matter" in said
    assert f"{folder}/b.md: description is missing" in said
    assert f"{folder}/c.md: the front matter is not valid YAML (line 3)" in said
    assert f"{folder}/d.md: max_turns must be a number of 0 or more, got 'lots'" in said
    assert f"{folder}/e.md: mode: unknown mode 'yolo'" in said
    assert len(defs.warnings) == 5


def test_a_child_mode_is_never_more_permissive() -> None:
    assert stricter_mode("default", "auto") == "default"
    assert stricter_mode("default", "plan") == "plan"
    assert stricter_mode("plan", "accept-edits") == "plan"
    assert stricter_mode("accept-edits", "") == "accept-edits"


def test_cli_says_bad_limits_and_bad_definitions(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    base = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "hi"]
    (monkey_home / "config.toml").write_text("[subagents]\nmax_depth = 9\n")
    run = invoke(base, home=monkey_home)
    assert run.returncode == 2 and run.stderr.strip() == "monkey: [subagents] max_depth must be between 1 and 5, got 9"
    (monkey_home / "config.toml").write_text("")
    put(monkey_home / "agents", "broken", "---\nname: broken\n---\n")
    run = invoke(base, home=monkey_home)
    assert run.returncode == 0
    assert f"monkey: agent skipped: {monkey_home}/agents/broken.md: description is missing" in run.stderr
