"""Fixtures of the checkpoint tests: workspaces with and without git, the checkpoint API on them
(the helpers that make changes are in tests/support/checkpoints.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.checkpoints.api import Checkpoints


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A workspace that is not a git repository."""
    ws = tmp_path / "plain"
    ws.mkdir()
    return ws


@pytest.fixture(params=["git", "plain"])
def any_ws(request: pytest.FixtureRequest, workspace: Path, tmp_path: Path) -> Path:
    """Each test runs in a git repository and in a plain folder."""
    if request.param == "git":
        return workspace
    ws = tmp_path / "plainws"
    ws.mkdir()
    (ws / "README.md").write_text("# proj\n")
    return ws


@pytest.fixture
def cps(any_ws: Path, monkey_home: Path) -> Checkpoints:
    """The checkpoint API on the workspace."""
    return Checkpoints(any_ws, home=monkey_home)
