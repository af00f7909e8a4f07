"""Fixtures of the checkpoint tests: a guard on a real workspace, and helpers to make changes."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from monkey.checkpoints.api import Checkpoints
from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.journal import Entry


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


def change(guard: CheckpointGuard, paths: list[str] | None, do: Callable[[], object], *,
           tool: str = "file_write", session: str = "s1", turn: int = 1) -> Entry:
    """Checkpoint, change, record: what the loop does around one tool call."""
    entry = guard.begin(tool=tool, paths=paths, session_id=session, turn=turn, call_id="call")
    do()
    assert guard.finish(entry, ok=True) == ""
    return entry


def tree_digest(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    """Every entry below ``root``: mode and content hash (link target for symlinks)."""
    out: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.relpath(os.path.join(folder, d), root) not in skip]
        for name in dirs + files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = (st.st_mode, os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = (st.st_mode, "dir")
            else:
                out[rel] = (st.st_mode, hashlib.sha256(Path(full).read_bytes()).hexdigest())
    return out


def git(ws: Path, *args: str) -> str:
    """Plain git in the user's repository (the way the user would run it)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(ws.parent)}
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True, env=env).stdout
