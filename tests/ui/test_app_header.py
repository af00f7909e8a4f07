"""The header at the top of the app: workspace, git branch, backend and model, tips; the status bar's mode."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from monkey.gitinfo import current_branch, short_path
from monkey.ui.widgets.app_header import AppHeader
from tests.support.app import settle, type_and_send

SIZE = (120, 36)


def header(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.query_one(AppHeader).render())


async def test_the_header_names_workspace_branch_backend_and_model(app_for, workspace: Path) -> None:
    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        first, tips = header(app).splitlines()
        assert str(workspace) in first and "⎇ main" in first
        assert f"scripted · {app.status.model}" in first
        assert "/help" in tips and "Ctrl+E" in tips and "Shift+Tab mode" in tips
        # it stays at the top of the screen, above the transcript
        assert app.query_one(AppHeader).region.y == 0

        await type_and_send(pilot, app, "/model bigger")
        await settle(pilot, app)
        assert "scripted · bigger" in header(app).splitlines()[0]


async def test_the_status_bar_says_when_approvals_are_off(app_for) -> None:
    app = app_for([{"text": "hello"}], "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert str(app.status.status_text()).startswith("⏵ auto (no approvals) · scripted")


def test_the_branch_is_read_without_running_git(tmp_path: Path, workspace: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "-C", str(workspace), "checkout", "-qb", "feature/x"], check=True, env=env)
    sub = workspace / "deep" / "er"
    sub.mkdir(parents=True)
    assert current_branch(sub) == "feature/x"
    # a linked worktree has a .git file pointing at its own HEAD
    linked = tmp_path / "linked"
    subprocess.run(
        ["git", "-C", str(workspace), "worktree", "add", "-q", "-b", "other", str(linked)], check=True, env=env
    )
    assert current_branch(linked) == "other"
    head = subprocess.run(
        ["git", "-C", str(workspace), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    subprocess.run(["git", "-C", str(workspace), "checkout", "-q", "--detach"], check=True, env=env)
    assert current_branch(workspace) == f"detached {head[:7]}"
    assert current_branch(Path("/")) is None


def test_the_home_folder_is_written_as_a_tilde(tmp_path: Path) -> None:
    assert short_path(tmp_path / "a" / "b", home=tmp_path) == "~/a/b"
    assert short_path(tmp_path, home=tmp_path) == "~"
    assert short_path(Path("/elsewhere/x"), home=tmp_path) == "/elsewhere/x"


async def test_the_header_follows_memory_add_making_the_memory_file(
    app_for, workspace: Path, monkey_home: Path
) -> None:
    from tests.support.cli import invoke_async

    assert (await invoke_async(["trust", str(workspace)], home=monkey_home)).returncode == 0
    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "· follows" not in header(app), "no instruction files yet"
        await type_and_send(pilot, app, "/memory add the tests run with make check")
        await settle(pilot, app)
        assert "· follows .monkey/memory.md" in header(app).splitlines()[0]
        await type_and_send(pilot, app, "/memory remove 1")
        await settle(pilot, app)
        assert "· follows" not in header(app), "an empty memory is no file the model follows"
