"""``monkey agent --worktree NAME`` and ``monkey worktrees``: real git worktrees, the real loop on the scripted backend."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.config import load_config
from tests.support.cli import invoke, write_script


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def writes(tmp_path: Path, name: str, path: str, content: str) -> Path:
    return write_script(
        tmp_path / f"{name}.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": content}}]},
            {"text": f"wrote {path}"},
        ],
    )


def run_in_worktree(workspace: Path, home: Path, script: Path, name: str, *more: str):  # type: ignore[no-untyped-def]
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--no-approval",
            f"--worktree={name}",
            "--output-format",
            "stream-json",
            *more,
            "--task",
            "go",
        ],
        home=home,
        cwd=workspace,
    )


def test_a_session_in_a_worktree_writes_there_only_and_continue_resumes_there(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    run = run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "new.txt", "hello\n"), "feat")
    assert run.returncode == 0, run.stderr
    wt = (workspace / ".monkey" / "worktrees" / "feat").resolve()
    assert f"worktree feat: {wt} on the new branch monkey/feat" in run.stderr
    assert (wt / "new.txt").read_text() == "hello\n"
    assert not (workspace / "new.txt").exists(), "the person's checkout is untouched"
    assert git(wt, "branch", "--show-current").strip() == "monkey/feat"
    assert git(workspace, "status", "--porcelain") == "", "the worktrees are excluded, nothing tracked changed"
    assert "/.monkey/worktrees/" in (workspace / ".git" / "info" / "exclude").read_text().splitlines()
    first = run.events[0]
    assert first["type"] == "session_started"
    session = first["session_id"]

    listed = invoke(["sessions", "list", "--json", "--cwd", str(wt)], home=monkey_home)
    assert [s["id"] for s in json.loads(listed.stdout)] == [session], "the session's stored cwd is the worktree"
    shown = invoke(["sessions", "show", session], home=monkey_home).stdout
    assert f"workspace  {wt}" in shown and f"worktree   feat (branch monkey/feat) of {workspace.resolve()}" in shown

    again = write_script(tmp_path / "again.json", [{"text": "still here"}])
    resumed = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(again),
            "--continue",
            "--output-format",
            "stream-json",
            "--task",
            "and?",
        ],
        home=monkey_home,
        cwd=wt,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.events[0]["session_id"] == session and resumed.events[0]["resumed"] is True


def test_undo_in_a_worktree_undoes_there(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / "README.md").write_text(
        "# proj\nthe person's edit\n"
    )  # a dirty checkout: the worktree starts from HEAD
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "README.md", "content": "# changed\n"}}]},
            {"text": "done"},
        ],
    )
    run = run_in_worktree(workspace, monkey_home, script, "fix")
    assert run.returncode == 0, run.stderr
    assert "has uncommitted changes; they stay there: the worktree starts from HEAD" in run.stderr
    wt = workspace / ".monkey" / "worktrees" / "fix"
    assert (wt / "README.md").read_text() == "# changed\n"
    assert (workspace / "README.md").read_text() == "# proj\nthe person's edit\n"
    undone = invoke(["undo"], home=monkey_home, cwd=wt)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert (wt / "README.md").read_text() == "# proj\n", "back to the worktree's own HEAD"
    assert (workspace / "README.md").read_text() == "# proj\nthe person's edit\n"


def test_two_sessions_in_two_worktrees_keep_apart_then_list_and_rm(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    one = run_in_worktree(workspace, monkey_home, writes(tmp_path, "one", "same.txt", "one\n"), "one")
    two = run_in_worktree(workspace, monkey_home, writes(tmp_path, "two", "same.txt", "two\n"), "two")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    base = workspace / ".monkey" / "worktrees"
    assert (base / "one" / "same.txt").read_text() == "one\n" and (base / "two" / "same.txt").read_text() == "two\n"
    assert one.events[0]["session_id"] != two.events[0]["session_id"]

    listed = invoke(["worktrees", "list", "--json"], home=monkey_home, cwd=base / "two")
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert set(rows) == {"one", "two"} and rows["one"]["branch"] == "monkey/one"
    assert rows["one"]["changed_files"] == 1 and rows["two"]["in_use"] is False
    text = invoke(["worktrees", "list"], home=monkey_home, cwd=workspace).stdout
    assert "one" in text and "monkey/two" in text and "1 changed" in text

    refused = invoke(["worktrees", "rm", "one"], home=monkey_home, cwd=workspace)
    assert refused.returncode == 1 and "uncommitted or untracked files (same.txt)" in refused.stderr
    assert (base / "one" / "same.txt").exists()
    git(base / "two", "add", "-A")
    git(base / "two", "commit", "-qm", "two")
    done = invoke(["worktrees", "rm", "two"], home=monkey_home, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "its branch monkey/two stays" in done.stdout and not (base / "two").exists()
    assert "two" in git(workspace, "log", "--format=%s", "monkey/two"), "the branch is left to merge"
    forced = invoke(["worktrees", "rm", "one", "--force"], home=monkey_home, cwd=workspace)
    assert forced.returncode == 0, forced.stderr
    assert not (base / "one").exists() and "monkey/one" in git(workspace, "branch", "--list", "monkey/one")
    assert invoke(["worktrees", "rm", "one"], home=monkey_home, cwd=workspace).returncode == 1


@pytest.mark.subprocess  # two monkey processes at once: what one does while the other makes its worktree
def test_two_monkeys_make_worktrees_at_the_same_time(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    from tests.support.cli import monkey_env

    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "monkey",
                "agent",
                "--backend",
                "scripted",
                "--no-approval",
                "--script",
                str(writes(tmp_path, name, "same.txt", f"{name}\n")),
                "--worktree",
                name,
                "--task",
                "go",
            ],
            cwd=workspace,
            env=monkey_env(monkey_home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    base = workspace / ".monkey" / "worktrees"
    assert (base / "left" / "same.txt").read_text() == "left\n" and (
        base / "right" / "same.txt"
    ).read_text() == "right\n"
    assert git(workspace, "status", "--porcelain") == ""
    inner = invoke(["worktrees", "list", "--json"], home=monkey_home, cwd=base / "left")
    assert [r["name"] for r in json.loads(inner.stdout)] == ["left", "right"], "from inside one: the same repository"


def test_rm_refuses_a_worktree_a_running_session_uses(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    from monkey.session.setup import SessionRequest, build_agent
    from monkey.session.stored import open_session

    made = invoke(["worktrees", "list"], home=monkey_home, cwd=workspace)
    assert "no worktrees" in made.stdout
    run = run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "busy")
    assert run.returncode == 0, run.stderr
    wt = workspace / ".monkey" / "worktrees" / "busy"
    script = write_script(tmp_path / "idle.json", [{"text": "idle"}])
    setup = build_agent(SessionRequest(workspace=wt, backend="scripted", script=str(script)), None)

    async def while_open() -> tuple[object, object, object]:
        assert setup.agent is not None
        handle = await open_session(setup.agent)
        try:
            during = await asyncio.to_thread(
                invoke, ["worktrees", "rm", "busy", "--force"], home=monkey_home, cwd=workspace
            )
            listed = await asyncio.to_thread(invoke, ["worktrees", "list", "--json"], home=monkey_home, cwd=workspace)
        finally:
            await handle.close()
        return during, listed, None

    during, listed, _ = asyncio.run(while_open())
    assert during.returncode == 1 and "a running monkey session works in" in during.stderr  # type: ignore[attr-defined]
    assert json.loads(listed.stdout)[0]["in_use"] is True  # type: ignore[attr-defined]
    assert wt.exists()
    after = invoke(["worktrees", "rm", "busy", "--force"], home=monkey_home, cwd=workspace)
    assert after.returncode == 0, after.stderr
    assert not wt.exists()


@pytest.mark.parametrize("name", ["..", "a/b", "../x", "-x", "a b", "x.lock", "é", "a..b"])
def test_bad_names_are_refused_before_anything_is_made(
    workspace: Path, monkey_home: Path, tmp_path: Path, name: str
) -> None:
    run = run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), name)
    assert run.returncode == 2 and "worktree name" in run.stderr, run.stderr
    assert not (workspace / ".monkey").exists()
    assert git(workspace, "branch", "--list", "monkey/*") == ""


def test_taken_names_branches_and_contradictions(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = writes(tmp_path, "a", "a.txt", "a\n")
    assert run_in_worktree(workspace, monkey_home, script, "taken").returncode == 0
    again = run_in_worktree(workspace, monkey_home, script, "taken")
    assert again.returncode == 2 and "a worktree named taken exists already" in again.stderr
    git(workspace, "branch", "monkey/mine")
    branch = run_in_worktree(workspace, monkey_home, script, "mine")
    assert branch.returncode == 2 and "the branch monkey/mine exists already" in branch.stderr
    assert not (workspace / ".monkey" / "worktrees" / "mine").exists()
    both = run_in_worktree(workspace, monkey_home, script, "other", "--continue")
    assert both.returncode == 2 and "--worktree makes a new worktree" in both.stderr
    bad = run_in_worktree(workspace, monkey_home, script, "late", "--mode", "bogus")
    assert bad.returncode == 2, bad.stderr
    assert not (workspace / ".monkey" / "worktrees" / "late").exists(), "a session that cannot start takes it back"
    assert git(workspace, "branch", "--list", "monkey/late") == ""
    made = run_in_worktree(workspace, monkey_home, script, "")
    assert made.returncode == 0, made.stderr
    names = [
        r["name"] for r in json.loads(invoke(["worktrees", "list", "--json"], home=monkey_home, cwd=workspace).stdout)
    ]
    assert len(names) == 2 and "taken" in names and any(n.startswith("wt-") for n in names), "without NAME: made up"


def test_repositories_a_worktree_cannot_come_from(monkey_home: Path, tmp_path: Path) -> None:
    script = writes(tmp_path, "a", "a.txt", "a\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    run = run_in_worktree(plain, monkey_home, script, "x")
    assert run.returncode == 2 and "is not in a git repository" in run.stderr
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    run = run_in_worktree(empty, monkey_home, script, "x")
    assert run.returncode == 2 and "has no commit yet" in run.stderr
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    run = run_in_worktree(bare, monkey_home, script, "x")
    assert run.returncode == 2 and "is a bare repository" in run.stderr
    listed = invoke(["worktrees", "list"], home=monkey_home, cwd=plain)
    assert listed.returncode == 1 and "is not in a git repository" in listed.stderr


def test_a_detached_head_is_said_and_the_branch_starts_there(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "second.txt").write_text("2\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "second")
    first = git(workspace, "rev-parse", "HEAD~1").strip()
    git(workspace, "checkout", "-q", "--detach", first)
    run = run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "old")
    assert run.returncode == 0, run.stderr
    assert f"HEAD is detached at {first[:7]}: the worktree's branch monkey/old starts there" in run.stderr
    assert git(workspace, "rev-parse", "monkey/old").strip() == first
    assert not (workspace / ".monkey" / "worktrees" / "old" / "second.txt").exists()


def test_a_worktree_shares_its_repository_s_trust(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text("[agent]\nmax_iterations = 7\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "config")
    assert run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "t").returncode == 0
    wt = workspace / ".monkey" / "worktrees" / "t"
    assert load_config(wt, home=monkey_home).untrusted == ["agent.max_iterations"], "an untrusted repository's"
    trusted = invoke(["trust"], home=monkey_home, cwd=wt)
    assert trusted.returncode == 0 and f"trusted: {workspace.resolve()} " in trusted.stdout, "the repository is trusted"
    assert load_config(wt, home=monkey_home).agent.max_iterations == 7
    assert load_config(workspace, home=monkey_home).agent.max_iterations == 7

    outside = tmp_path / "outside"  # a linked worktree elsewhere shares it too (git worktree add)
    git(workspace, "worktree", "add", "-q", "-b", "elsewhere", str(outside))
    assert load_config(outside, home=monkey_home).agent.max_iterations == 7

    fake = tmp_path / "fake"  # a folder that claims the repository without git's link back: its own trust
    fake.mkdir()
    (fake / ".monkey").mkdir()
    (fake / ".monkey" / "config.toml").write_text("[agent]\nmax_iterations = 9\n")
    (fake / ".git").write_text(f"gitdir: {workspace / '.git' / 'worktrees' / 'outside'}\n")
    assert load_config(fake, home=monkey_home).untrusted == ["agent.max_iterations"]

    assert invoke(["trust", "--revoke"], home=monkey_home, cwd=outside).returncode == 0
    assert load_config(wt, home=monkey_home).untrusted == ["agent.max_iterations"]


ISOLATED = """---
name: iso
description: works in a worktree of its own
isolation: worktree
---
You work alone.
"""


def delegate(tmp_path: Path, child: dict) -> Path:  # type: ignore[type-arg]
    call = {"name": "task", "arguments": {"description": "alone", "prompt": "do it", "agent": "iso"}}
    return write_script(
        tmp_path / "s.json", [{"tool_calls": [call]}, {"text": "the child is done"}], agents={"iso": child}
    )


def test_a_sub_agent_with_isolation_worktree_works_in_its_own(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (monkey_home / "agents").mkdir()
    (monkey_home / "agents" / "iso.md").write_text(ISOLATED)
    child = {
        "turns": [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "found.txt", "content": "42\n"}}]},
            {"text": "wrote found.txt"},
        ]
    }
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(delegate(tmp_path, child)),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "delegate",
        ],
        home=monkey_home,
        cwd=workspace,
    )
    assert run.returncode == 0, run.stderr
    [done] = run.of_type("subagent_completed")
    handoff = done["handoff"]
    wt = Path(handoff["worktree"])
    assert wt.parent == (workspace / ".monkey" / "worktrees").resolve() and wt.name.startswith("iso-")
    assert handoff["branch"] == f"monkey/{wt.name}" and handoff["files_changed"] == ["found.txt"]
    assert (wt / "found.txt").read_text() == "42\n" and not (workspace / "found.txt").exists()
    [result] = [e for e in run.of_type("tool_result") if e["name"] == "task"]
    assert f"worktree: {wt} (branch monkey/{wt.name})" in result["output"]
    [started] = [e for e in run.of_type("session_started") if e["session_id"] == done["child_session_id"]]
    assert started["workspace"] == str(wt), "the child's session is stored in its worktree"
    undone = invoke(["undo"], home=monkey_home, cwd=wt)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert not (wt / "found.txt").exists(), "the child's change is undoable in its worktree"
    assert invoke(["worktrees", "rm", wt.name], home=monkey_home, cwd=workspace).returncode == 0


def test_an_isolated_sub_agent_that_changes_nothing_leaves_no_worktree(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (monkey_home / "agents").mkdir()
    (monkey_home / "agents" / "iso.md").write_text(ISOLATED)
    script = delegate(tmp_path, {"turns": [{"text": "nothing to do"}]})
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "delegate",
        ],
        home=monkey_home,
        cwd=workspace,
    )
    assert run.returncode == 0, run.stderr
    [done] = run.of_type("subagent_completed")
    assert done["handoff"]["worktree"] == "" and done["handoff"]["completed"] is True
    assert [p.name for p in (workspace / ".monkey" / "worktrees").iterdir()] == [".lock"]
    assert git(workspace, "branch", "--list", "monkey/*") == "", "its branch went with it"

    plain = tmp_path / "plain"
    plain.mkdir()
    refused = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "delegate",
        ],
        home=monkey_home,
        cwd=plain,
    )
    assert refused.returncode == 0, refused.stderr
    [result] = [e for e in refused.of_type("tool_result") if e["name"] == "task"]
    assert result["ok"] is False and "none can be made here" in result["output"]
    assert "is not in a git repository" in result["output"]


def test_isolation_takes_only_worktree(tmp_path: Path) -> None:
    from monkey.agent.agent_defs import AgentDefError, parse_agent

    parsed, _ = parse_agent(ISOLATED, tmp_path / "iso.md", "user")
    assert parsed.isolation == "worktree"
    with pytest.raises(AgentDefError, match="isolation must be worktree"):
        parse_agent(ISOLATED.replace("isolation: worktree", "isolation: container"), tmp_path / "iso.md", "user")


def test_instructions_come_from_the_worktree_and_the_checkout_s_sessions_cannot_write_there(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "AGENTS.md").write_text("committed rules\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "rules")
    (workspace / "AGENTS.md").write_text("committed rules\nand an uncommitted line\n")
    assert invoke(["trust", str(workspace)], home=monkey_home).returncode == 0
    run = run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "rules")
    assert run.returncode == 0, run.stderr
    wt = (workspace / ".monkey" / "worktrees" / "rules").resolve()
    [started] = run.of_type("session_started")
    committed = hashlib.sha256(b"committed rules\n").hexdigest()
    assert [(ref["path"], ref["sha256"]) for ref in started["instructions"]] == [("AGENTS.md", committed)], (
        "the worktree's own AGENTS.md (HEAD's), not the checkout's"
    )

    into = write_script(
        tmp_path / "into.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "file_write",
                        "arguments": {"path": ".monkey/worktrees/rules/a.txt", "content": "from the checkout\n"},
                    }
                ]
            },
            {"text": "tried"},
        ],
    )
    main = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(into),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "go",
        ],
        home=monkey_home,
        cwd=workspace,
    )
    [result] = main.of_type("tool_result")
    assert result["ok"] is False and ".monkey/" in result["output"], "a worktree is in the protected .monkey/"
    assert (wt / "a.txt").read_text() == "a\n"


def test_an_isolated_sub_agent_works_in_the_same_folder_of_its_worktree(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (monkey_home / "agents").mkdir()
    (monkey_home / "agents" / "iso.md").write_text(ISOLATED)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "kept.txt").write_text("kept\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "sub")
    child = {
        "turns": [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "found.txt", "content": "42\n"}}]},
            {"text": "wrote found.txt"},
        ]
    }
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(delegate(tmp_path, child)),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "delegate",
        ],
        home=monkey_home,
        cwd=workspace / "sub",
    )
    assert run.returncode == 0, run.stderr
    [done] = run.of_type("subagent_completed")
    wt = Path(done["handoff"]["worktree"])
    assert (wt / "sub" / "found.txt").read_text() == "42\n", "the parent works in sub/, so the child does too"
    assert not (workspace / "sub" / "found.txt").exists()


def test_started_in_a_subfolder_the_session_works_in_the_worktree_s_copy_of_it(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "mod.py").write_text("x = 1\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "pkg")
    run = run_in_worktree(workspace / "pkg", monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "sub")
    assert run.returncode == 0, run.stderr
    wt = (workspace / ".monkey" / "worktrees" / "sub").resolve()
    assert (wt / "pkg" / "a.txt").exists() and run.events[0]["workspace"] == str(wt / "pkg")
    assert "the session works in" in run.stderr


@pytest.mark.pty
def test_asked_in_a_worktree_trust_goes_to_its_repository(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    import pexpect

    from tests.support.pty import spawn_repl

    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text("[agent]\nmax_iterations = 3\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "config")
    child = spawn_repl(
        workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "hi"}]), "--worktree", "ask", columns=250
    )
    child.expect_exact(f"(a git worktree: its repository {workspace.resolve()})? [y/N]")
    child.sendline("y")
    child.expect_exact("Type a task")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert json.loads((monkey_home / "trusted_folders.json").read_text()) == {"folders": [str(workspace.resolve())]}


def test_a_worktree_deleted_by_hand_is_listed_missing_and_rm_forgets_it(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import shutil

    assert run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "gone").returncode == 0
    shutil.rmtree(workspace / ".monkey" / "worktrees" / "gone")
    assert "missing" in invoke(["worktrees", "list"], home=monkey_home, cwd=workspace).stdout
    done = invoke(["worktrees", "rm", "gone"], home=monkey_home, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "no worktrees" in invoke(["worktrees", "list"], home=monkey_home, cwd=workspace).stdout
    assert "monkey/gone" in git(workspace, "branch", "--list", "monkey/gone")
    bare = invoke(["worktrees"], home=monkey_home, cwd=workspace)
    assert bare.returncode == 2 and "usage: monkey worktrees list|rm NAME" in bare.stderr


def test_undo_in_the_checkout_leaves_its_worktrees_alone(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    assert run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "side").returncode == 0
    wt = workspace / ".monkey" / "worktrees" / "side"
    script = write_script(
        tmp_path / "sh.json",
        [{"tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch out.txt"}}]}, {"text": "ok"}],
    )
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "go",
        ],
        home=monkey_home,
        cwd=workspace,
    )
    assert run.returncode == 0, run.stderr
    assert (workspace / "out.txt").exists(), [e["output"] for e in run.events if e["type"] == "tool_result"]
    undone = invoke(["undo"], home=monkey_home, cwd=workspace)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert not (workspace / "out.txt").exists() and (wt / "a.txt").read_text() == "a\n"
    assert git(wt, "status", "--porcelain") == "?? a.txt\n"


def test_rm_force_respects_a_worktree_the_person_locked(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    assert run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "mine").returncode == 0
    wt = workspace / ".monkey" / "worktrees" / "mine"
    git(workspace, "worktree", "lock", "--reason", "keep it", str(wt))
    assert "locked" in invoke(["worktrees", "list"], home=monkey_home, cwd=workspace).stdout
    refused = invoke(["worktrees", "rm", "mine", "--force"], home=monkey_home, cwd=workspace)
    assert refused.returncode == 1 and "worktree mine is locked (keep it): git worktree unlock" in refused.stderr
    assert wt.exists()
    git(workspace, "worktree", "unlock", str(wt))
    assert invoke(["worktrees", "rm", "mine", "--force"], home=monkey_home, cwd=workspace).returncode == 0


def test_a_project_mcp_server_approved_in_the_repository_is_not_asked_again_in_its_worktree(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from monkey.session.setup import Questions, SessionRequest, resolve_setup

    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": {"command": "true"}}}))
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "mcp")
    assert invoke(["trust", str(workspace)], home=monkey_home).returncode == 0
    asked: list[str] = []

    def ask(config) -> bool:  # type: ignore[no-untyped-def]
        asked.append(config.name)
        return True

    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    resolve_setup(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script)), None, Questions(mcp_server=ask)
    )
    assert asked == ["tools"]
    assert run_in_worktree(workspace, monkey_home, writes(tmp_path, "a", "a.txt", "a\n"), "mcp").returncode == 0
    setup = resolve_setup(
        SessionRequest(workspace=workspace / ".monkey" / "worktrees" / "mcp", backend="scripted", script=str(script)),
        None,
        Questions(mcp_server=ask),
    )
    assert asked == ["tools"], "approved for the repository: its worktree's session starts it without asking"
    assert setup.mcp is not None and setup.mcp.refused == {}
