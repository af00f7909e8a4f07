"""Commands the agent runs never wait for a person and never run the repository's git programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from monkey.tools.base import ShellSettings, ToolContext, ToolError
from monkey.tools.child_env import for_child
from monkey.tools.shell import ShellArgs, ShellExecute


def run(workspace: Path, command: str) -> tuple[bool, str]:
    ctx = ToolContext(workspace=workspace, call_id="c1", shell=ShellSettings(timeout=60))
    import asyncio

    try:
        return True, asyncio.run(ShellExecute().run(ShellArgs(command=command), ctx)).output
    except ToolError as exc:
        return False, str(exc)


def test_git_status_does_not_run_the_repository_s_fsmonitor(workspace: Path) -> None:
    marker = workspace.parent / "FSMONITOR-RAN"
    hook = workspace.parent / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=workspace, check=True)
    (workspace / "README.md").write_text("# changed\n")
    ok, output = run(workspace, "git status --short")
    assert ok and "README.md" in output
    assert not marker.exists(), "the repository's fsmonitor program ran"


def test_git_commit_without_a_message_ends_at_once_instead_of_opening_an_editor(workspace: Path) -> None:
    (workspace / "README.md").write_text("# changed\n")
    subprocess.run(["git", "add", "README.md"], cwd=workspace, check=True)
    ok, output = run(workspace, "git -c user.email=a@b -c user.name=a commit")
    assert not ok and "empty commit message" in output and "timed out" not in output


def test_existing_git_config_entries_are_kept() -> None:
    env = for_child(
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "me", "PATH": "/bin"}
    )
    assert env["GIT_CONFIG_KEY_0"] == "user.name" and env["GIT_CONFIG_KEY_1"] == "core.fsmonitor"
    assert int(env["GIT_CONFIG_COUNT"]) == 4 and env["PATH"] == "/bin" and env["GIT_EDITOR"] == "true"
    assert for_child({"GIT_CONFIG_COUNT": "junk"})["GIT_CONFIG_KEY_0"] == "core.fsmonitor"


def test_git_diff_does_not_run_the_repository_s_external_diff(workspace: Path) -> None:
    marker = workspace.parent / "EXTERNAL-DIFF-RAN"
    subprocess.run(["git", "config", "diff.external", f"sh -c 'touch {marker}'"], cwd=workspace, check=True)
    (workspace / "README.md").write_text("# changed\n")
    ok, output = run(workspace, "git diff")
    assert ok and "-# proj" in output and "+# changed" in output and "+++ b/README.md" in output
    assert not marker.exists(), "the repository's external diff program ran"
    # and through an included file, which monkey does not read: any include gets the plain diff too
    subprocess.run(["git", "config", "--unset", "diff.external"], cwd=workspace, check=True)
    extra = workspace.parent / "extra.gitconfig"
    extra.write_text(f"[diff]\n\texternal = sh -c 'touch {marker}'\n")
    subprocess.run(["git", "config", "include.path", str(extra)], cwd=workspace, check=True)
    ok, output = run(workspace, "git diff")
    assert ok and "+# changed" in output and not marker.exists()


def test_an_ordinary_repository_keeps_git_s_own_diff(workspace: Path) -> None:
    (workspace / "README.md").write_text("# changed\n")
    ok, output = run(workspace, "git diff")
    assert ok and "diff --git a/README.md b/README.md" in output
    assert "GIT_EXTERNAL_DIFF" not in for_child({}, workspace)
