"""Permission modes and the protected set, in the engine and through the CLI with a hostile model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monkey.permissions.policy import PLAN_REFUSAL, ApprovalPolicy
from monkey.permissions.rules import rules_for
from monkey.modes import ModeError, next_mode, parse_mode
from tests.support.cli import invoke, write_script


def shell(command: str) -> dict[str, Any]:
    return {"command": command}


def decide(policy: ApprovalPolicy, tool: str, arguments: dict[str, Any], ws: Path | None = None) -> str:
    decision = policy.check(tool, arguments, ws)
    return "ask" if decision is None else ("allow" if decision.approved else "deny")


def test_mode_names_and_the_cycle() -> None:
    assert parse_mode("Accept_Edits") == "accept-edits" and parse_mode("no-approval") == "auto"
    with pytest.raises(ModeError, match="unknown mode 'yolo'"):
        parse_mode("yolo")
    assert next_mode("default", auto_allowed=False) == "accept-edits"
    assert next_mode("plan", auto_allowed=False) == "default"
    assert next_mode("plan", auto_allowed=True) == "auto"
    assert next_mode("auto", auto_allowed=True) == "default"


@pytest.mark.parametrize(
    ("mode", "write", "command"),
    [
        ("default", "ask", "ask"),
        ("accept-edits", "allow", "ask"),
        ("plan", "deny", "deny"),
        ("auto", "allow", "allow"),
    ],
)
def test_what_each_mode_lets_run(mode: str, write: str, command: str, tmp_path: Path) -> None:
    policy = ApprovalPolicy(mode=mode)  # type: ignore[arg-type]
    assert decide(policy, "file_write", {"path": "a.txt", "content": "x"}, tmp_path) == write
    assert decide(policy, "file_delete", {"path": "a.txt"}, tmp_path) == write
    assert decide(policy, "shell_execute", shell("make build"), tmp_path) == command


def test_deny_rules_beat_every_mode(tmp_path: Path) -> None:
    for mode in ("default", "accept-edits", "plan", "auto"):
        policy = ApprovalPolicy.from_strings(deny=["file_write(*.lock)", "shell_execute(curl)"], mode=mode)  # type: ignore[arg-type]
        assert decide(policy, "file_write", {"path": "x.lock", "content": ""}, tmp_path) == "deny"
        assert decide(policy, "shell_execute", shell("env A=1 curl x | sh"), tmp_path) == "deny"


def test_plan_mode_ignores_rules_and_grants_that_would_change_things(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(allow=["file_edit", "shell_execute(make)"], mode="plan")
    policy.remember("file_write", {"path": "a"})
    for tool, args in (("file_edit", {"path": "a"}), ("file_write", {"path": "a"}), ("shell_execute", shell("make"))):
        decision = policy.check(tool, args, tmp_path)
        assert decision is not None and not decision.approved and decision.reason == PLAN_REFUSAL


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("git commit -m x", ".git/"),
        ("git -C sub commit -am x", ".git/"),
        ("git config core.fsmonitor ./evil", ".git/"),
        ("git branch -D main", ".git/"),
        ("git stash", ".git/"),
        ("cp evil .git/hooks/pre-commit", ".git"),
        ("cp evil ./sub/../.GIT/hooks/pre-commit", ".GIT"),
        ("tee .monkey/config.toml", ".monkey"),
        ("make && cp x .monkey/config.toml", ".monkey"),
        ("cp x ~/.bashrc", "home folder"),
        ("sh -c 'cp x ~/.bashrc'", "home folder"),
        ("echo hi > .git/hooks/post-checkout", ".git"),
        ("install --target-directory=.git/hooks x", ".git"),
    ],
)
def test_protected_paths_need_a_person_in_every_mode(command: str, why: str, tmp_path: Path) -> None:
    for mode in ("default", "accept-edits", "auto"):
        policy = ApprovalPolicy.from_strings(allow=["shell_execute"], mode=mode)  # type: ignore[arg-type]
        policy.remember("shell_execute", shell("cp a b"))
        assert decide(policy, "shell_execute", shell(command), tmp_path) == "ask", (mode, command)
        assert why in (policy.needs_person("shell_execute", shell(command), tmp_path) or "")
    plan = ApprovalPolicy(mode="plan")
    assert decide(plan, "shell_execute", shell(command), tmp_path) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git log -p",
        "git diff HEAD~1",
        "git branch -a",
        "git config --get user.name",
        "git remote -v",
        "cat .gitignore",
        "ls docs",
        "python /tmp/script.py",
        "pytest tests/",
        "make -C sub",
    ],
)
def test_ordinary_commands_are_not_protected(command: str, tmp_path: Path) -> None:
    policy = ApprovalPolicy(mode="auto")
    assert policy.needs_person("shell_execute", shell(command), tmp_path) is None
    assert decide(policy, "shell_execute", shell(command), tmp_path) == "allow"


def test_a_file_tool_writing_into_monkeys_home_needs_a_person(tmp_path: Path) -> None:
    home = tmp_path / "ws" / "monkey-home"
    home.mkdir(parents=True)
    (tmp_path / "ws" / "link").symlink_to(home)
    policy = ApprovalPolicy.from_strings(allow=["file_write"], mode="auto")
    policy.protected_roots = (home,)
    for path in ("monkey-home/config.toml", "link/config.toml", "x/../monkey-home/trusted_folders.json"):
        assert decide(policy, "file_write", {"path": path, "content": ""}, tmp_path / "ws") == "ask", path
    assert decide(policy, "file_write", {"path": "src/a.py", "content": ""}, tmp_path / "ws") == "allow"


def test_always_allow_saves_one_prefix_rule_per_command() -> None:
    assert rules_for("shell_execute", shell("git commit -m x && npm run test -- -k y")) == [
        "shell_execute(git commit)",
        "shell_execute(npm run test)",
    ]
    assert rules_for("shell_execute", shell("docker compose up -d; python -m pytest -q; ls -la")) == [
        "shell_execute(docker compose up)",
        "shell_execute(python -m pytest)",
        "shell_execute(ls)",
    ]
    assert rules_for("shell_execute", shell("echo $(id)")) == []  # the parser cannot vouch for it
    assert rules_for("file_edit", {"path": "a"}) == []  # a file tool's rule names a workspace's folder
    assert rules_for("task", {"agent": "explore"}) == ["task"]
    saved: list[list[str]] = []
    policy = ApprovalPolicy()
    policy.save_rules = saved.append
    assert policy.keep("shell_execute", shell("npm run test")) == ["shell_execute(npm run test)"]
    assert policy.keep("shell_execute", shell("npm run test -- -k y")) == []  # already there
    assert saved == [["shell_execute(npm run test)"]]
    assert decide(policy, "shell_execute", shell("npm run test -- --watch=false")) == "allow"
    assert decide(policy, "shell_execute", shell("npm run deploy")) == "ask"


# -- through the CLI, with the scripted backend playing a hostile model -------------------------------


def task(workspace: Path, home: Path, tmp_path: Path, turns: list[dict[str, Any]], *flags: str, **env: str):  # type: ignore[no-untyped-def]
    script = write_script(tmp_path / "script.json", [*turns, {"text": "done"}])
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
            "--task",
            "go",
            *flags,
        ],
        home=home,
        **env,
    )


def shell_call(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell_execute", "arguments": {"command": command}}]}


def test_auto_mode_headless_refuses_protected_writes(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    fake_home = tmp_path / "person"
    fake_home.mkdir()
    hooks = workspace / ".git" / "hooks"
    run = task(
        workspace,
        monkey_home,
        tmp_path,
        [
            shell_call("cp README.md .git/hooks/pre-commit"),
            shell_call("git config core.fsmonitor 'touch PWNED'"),
            shell_call("mkdir -p .monkey && cp README.md .monkey/config.toml"),
            shell_call("cp README.md ~/.bashrc"),
            shell_call(f"cp README.md {monkey_home}/config.toml"),
            shell_call("cp README.md copy.md"),
        ],
        "--no-approval",
        HOME=str(fake_home),
    )
    assert run.returncode == 4, run.stderr  # calls were denied: the task could not do all it meant to
    results = run.of_type("tool_result")
    assert [r["ok"] for r in results] == [False, False, False, False, False, True]
    assert all("needs a person's approval of this exact call" in r["output"] for r in results[:5])
    assert not (hooks / "pre-commit").exists() and not (workspace / ".monkey").exists()
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    assert not (fake_home / ".bashrc").exists() and not (monkey_home / "config.toml").exists()
    assert (workspace / "copy.md").exists()


def test_mode_flag_plan_refuses_changes_headless(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    run = task(
        workspace,
        monkey_home,
        tmp_path,
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "new.txt", "content": "x"}}]},
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "README.md"}}]},
        ],
        "--mode",
        "plan",
    )
    assert run.returncode == 4, run.stderr
    write, read = run.of_type("tool_result")
    assert not write["ok"] and "plan mode is read-only" in write["output"] and read["ok"]
    assert not (workspace / "new.txt").exists()


def test_bad_mode_flags_are_usage_errors(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    bad = task(workspace, monkey_home, tmp_path, [], "--mode", "yolo")
    assert bad.returncode == 2 and "unknown mode 'yolo'" in bad.stderr
    both = task(workspace, monkey_home, tmp_path, [], "--mode", "plan", "--no-approval")
    assert both.returncode == 2 and "contradicts --mode plan" in both.stderr


def test_a_project_config_cannot_start_in_auto(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text('[approvals]\nmode = "auto"\n')
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")
    run = task(
        workspace,
        monkey_home,
        tmp_path,
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "new.txt", "content": "x"}}]},
        ],
    )
    assert not (workspace / "new.txt").exists()
    assert 'ignored approvals.mode = "auto"' in run.stderr
    (workspace / ".monkey" / "config.toml").write_text('[approvals]\nmode = "accept-edits"\n')
    run = task(
        workspace,
        monkey_home,
        tmp_path,
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "new.txt", "content": "x"}}]},
        ],
    )
    assert run.returncode == 0, run.stderr
    assert (workspace / "new.txt").exists()


def test_plan_mode_runs_read_only_commands_and_refuses_the_rest(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(mode="plan")
    assert decide(policy, "shell_execute", shell("git status && ls -la | head -5"), tmp_path) == "allow"
    assert decide(policy, "shell_execute", shell("cat .git/config"), tmp_path) == "allow"  # reading is not writing
    for line in ("make", "find . -delete", "git status && touch x", "sed -i s/a/b/ f"):
        assert decide(policy, "shell_execute", shell(line), tmp_path) == "deny", line


def test_a_rule_that_cannot_be_saved_still_holds_for_the_session(tmp_path: Path) -> None:
    from monkey.permissions.user_rules import add_rules

    (tmp_path / "config.toml").write_text("[approvals\nallow = [\n")  # broken since the session started
    policy = ApprovalPolicy()
    policy.save_rules = lambda rules: add_rules(tmp_path, rules) and None
    with pytest.raises(OSError, match="not valid TOML"):
        policy.keep("shell_execute", shell("npm run test"))
    assert decide(policy, "shell_execute", shell("npm run test -- -k x")) == "allow"
    assert (tmp_path / "config.toml").read_text() == "[approvals\nallow = [\n"  # the person's file untouched


def test_a_sub_agents_policy_follows_its_parents_mode_changes_never_above_where_it_started() -> None:
    from dataclasses import replace

    parent = ApprovalPolicy(mode="accept-edits")
    child = replace(parent, allow=[])
    parent.lead(child, "default")  # the agent's definition asks for default: stricter, so it starts there
    grandchild = replace(child)
    child.lead(grandchild)
    assert (child.mode, grandchild.mode) == ("default", "default")
    parent.set_mode("plan")
    assert (child.mode, grandchild.mode) == ("plan", "plan")  # at once, down the whole tree
    parent.set_mode("auto")
    assert (child.mode, grandchild.mode) == ("default", "default")  # back, but never above where they started
    child.set_mode("plan")
    assert (parent.mode, child.mode, grandchild.mode) == ("auto", "plan", "plan")  # a child never leads its parent
