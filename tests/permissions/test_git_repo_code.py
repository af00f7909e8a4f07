"""A repository whose own config makes git run a program of its choosing (a textconv or diff
driver, a filter, an fsmonitor hook, a post-index-change hook, a pager, a gpg program...) gets no
read-only git: ``git diff``, ``git log -p`` and ``git status`` go to a person, and so never run its
code unasked. Each case is first shown to work on a real repository: plain git run there makes
the marker."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from monkey.permissions.decide import Call, decide
from monkey.permissions.git_repo import runs_repository_code
from monkey.permissions.policy import ApprovalPolicy
from tests.support.cli import init_git_workspace

MARK = "MARK"


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(ws.parent),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=30, check=False)


def _repo(
    tmp_path: Path,
    config: str,
    *,
    attributes: str = "",
    hook: str = "",
    in_tree: dict[str, str] | None = None,
    configured_in: str = ".git/config",
) -> Path:
    ws = init_git_workspace(tmp_path / "repo", tmp_path)
    (ws / "a.txt").write_text("one\n")
    if attributes:
        (ws / ".gitattributes").write_text(attributes)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "a")
    (ws / "a.txt").write_text("one\ntwo\n")  # a change for git diff and git status to look at
    for name, text in (in_tree or {}).items():
        (ws / name).write_text(text.replace(MARK, str(ws / MARK)))
        (ws / name).chmod(0o755)
    with (ws / configured_in).open("a") as fh:
        fh.write(config.replace(MARK, str(ws / MARK)))
    if hook:
        hooks = ws / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        (hooks / "post-index-change").write_text(f"#!/bin/sh\ntouch {ws / MARK}\n")
        (hooks / "post-index-change").chmod(0o755)
    return ws


CASES = {
    "textconv": dict(config='[diff "m"]\n\ttextconv = "touch MARK; cat"\n', attributes="*.txt diff=m\n", runs=["diff"]),
    "textconv in git log -p": dict(
        config='[diff "m"]\n\ttextconv = "touch MARK; cat"\n', attributes="*.txt diff=m\n", runs=["log", "-p"]
    ),
    "diff driver": dict(
        config='[diff "m"]\n\tcommand = "touch MARK; true"\n', attributes="*.txt diff=m\n", runs=["diff"]
    ),
    "diff.external": dict(config="[diff]\n\texternal = \"sh -c 'touch MARK'\"\n", runs=["diff"]),
    "clean filter": dict(
        config='[filter "f"]\n\tclean = "touch MARK; cat"\n', attributes="*.txt filter=f\n", runs=["diff"]
    ),
    "fsmonitor": dict(
        config="[core]\n\tfsmonitor = ./fsm.sh\n", in_tree={"fsm.sh": "#!/bin/sh\ntouch MARK\n"}, runs=["status"]
    ),
    "post-index-change hook": dict(config="", hook="yes", runs=["status"]),
    "included from the work tree": dict(
        config="[include]\n\tpath = ../evil.cfg\n",
        attributes="*.txt diff=m\n",
        in_tree={"evil.cfg": '[diff "m"]\n\ttextconv = "touch MARK; cat"\n'},
        runs=["diff"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_git_in_a_repository_that_runs_its_own_code_is_not_read_only(case: str, tmp_path: Path) -> None:
    spec = CASES[case]
    ws = _repo(
        tmp_path,
        str(spec["config"]),
        attributes=str(spec.get("attributes", "")),
        hook=str(spec.get("hook", "")),
        in_tree=spec.get("in_tree"),
    )  # type: ignore[arg-type]
    runs: list[str] = spec["runs"]  # type: ignore[assignment]
    command = "git " + " ".join(runs)
    for mode in ("default", "plan", "accept-edits"):
        policy = ApprovalPolicy.from_strings(mode=mode)
        for line in (command, f"{command} | head -5", f"cd {ws} && {command}"):
            verdict = decide(policy, Call("c1", "shell_execute", {"command": line}, ws))
            assert verdict.decision is None or not verdict.decision.approved, (case, mode, line)
    assert runs_repository_code(ws / "sub" / "dir") is not None  # from a folder below the root too
    assert not (ws / MARK).exists()
    _git(ws, "-c", "core.fsmonitorHookVersion=2", *runs) if case == "fsmonitor" else _git(ws, *runs)
    if case == "post-index-change hook":
        os.utime(ws / "README.md", (1, 1))
        _git(ws, "status")
    assert (ws / MARK).exists(), f"{case}: git itself never ran the repository's program here"


def test_git_in_a_plain_repository_stays_read_only(tmp_path: Path) -> None:
    ws = _repo(tmp_path, "[core]\n\tfsmonitor = false\n[user]\n\tname = t\n", attributes="*.txt text\n")
    policy = ApprovalPolicy.from_strings()
    for line in (
        "git status",
        "git diff",
        "git log -p",
        "git diff | head -5",
        "cd sub && git status",
        f"git -C {ws} status",
    ):
        verdict = decide(policy, Call("c1", "shell_execute", {"command": line}, ws))
        assert verdict.decision is not None and verdict.decision.approved, line


def test_a_change_to_the_config_is_seen_at_the_next_decision(tmp_path: Path) -> None:
    ws = _repo(tmp_path, "")
    policy = ApprovalPolicy.from_strings()
    assert policy.check("shell_execute", {"command": "git diff"}, ws) is not None
    with (ws / ".git" / "config").open("a") as fh:
        fh.write('[diff "m"]\n\ttextconv = cat\n')
    assert policy.check("shell_execute", {"command": "git diff"}, ws) is None
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    _git(nested, "init", "-q")
    with (nested / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tpager = less\n")
    assert policy.check("shell_execute", {"command": "cd vendor/lib && git log"}, ws) is None
    assert policy.check("shell_execute", {"command": "git -C vendor/lib log"}, ws) is None
    assert policy.check("shell_execute", {"command": "cd $D && git log"}, ws) is None
    assert policy.check("shell_execute", {"command": "cd ~otheruser && git log"}, ws) is None
    plain = tmp_path / "plain"  # no repository: only where the line goes counts
    plain.mkdir()
    if runs_repository_code(Path(os.path.expanduser("~"))) is None:
        assert policy.check("shell_execute", {"command": "cd ~ && git log"}, plain) is not None
    assert policy.check("shell_execute", {"command": f"cd {ws} && git log"}, plain) is None


def test_headless_git_diff_in_such_a_repository_runs_nothing(scripted, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    (workspace / ".gitattributes").write_text("*.txt diff=m\n")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "a")
    (workspace / "a.txt").write_text("two\n")
    with (workspace / ".git" / "config").open("a") as fh:
        fh.write(f'[diff "m"]\n\ttextconv = "touch {workspace / MARK}; cat"\n')
    run = scripted(
        [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "git diff"}}]},
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "git log -p"}}]},
            {"text": "done"},
        ]
    )
    results = run.of_type("tool_result")
    assert len(results) == 2 and not any(r["ok"] for r in results), results
    assert not (workspace / MARK).exists()


def test_a_submodules_config_counts_and_a_linked_worktree_reads_the_common_config(tmp_path: Path) -> None:
    ws = _repo(tmp_path, "")
    assert runs_repository_code(ws) is None
    module = ws / ".git" / "modules" / "lib"
    module.mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/main\n")
    (module / "config").write_text('[core]\n\tbare = false\n[filter "lfsx"]\n\tsmudge = ./run-me\n')
    assert "filter.lfsx.smudge" in (runs_repository_code(ws) or "")
    (module / "config").write_text("[core]\n\tbare = false\n")
    assert runs_repository_code(ws) is None
    linked = tmp_path / "linked"
    _git(ws, "worktree", "add", "-q", str(linked))
    assert runs_repository_code(linked) is None
    with (ws / ".git" / "config").open("a") as fh:
        fh.write("[gpg]\n\tprogram = ./sign\n")
    assert "gpg.program" in (runs_repository_code(linked) or "")


def test_rules_written_with_a_star_mean_the_prefix_for_deny_rules_too() -> None:
    policy = ApprovalPolicy.from_strings(allow=["shell_execute"], deny=["shell_execute(rm:*)", "shell_execute(curl *)"])
    for line in ("rm -rf x", "ls && curl http://x"):
        decision = policy.check("shell_execute", {"command": line})
        assert decision is not None and not decision.approved and decision.by == "rule", line


def test_a_submodule_of_the_old_layout_named_in_gitmodules_counts(tmp_path: Path) -> None:
    ws = _repo(tmp_path, "")
    inner = ws / "lib"
    inner.mkdir()
    _git(inner, "init", "-q")
    with (inner / ".git" / "config").open("a") as fh:
        fh.write("[core]\n\tfsmonitor = ./watch\n")
    assert runs_repository_code(ws) is None
    (ws / ".gitmodules").write_text('[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n')
    assert "core.fsmonitor" in (runs_repository_code(ws) or "")
