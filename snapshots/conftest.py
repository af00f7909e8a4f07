"""Snapshot tests reuse the suite's fixtures: an isolated monkey home, a git workspace, and
the real app on a scripted backend.

What a screenshot shows must be the same on every machine. The workspace is therefore at
one fixed path (:data:`SNAPSHOT_WORKSPACE`), not under pytest's temporary folder, whose
path differs in length from machine to machine and would change what the app shows (the
path itself, and the token count of a system prompt that names it). Test runs that share a
machine take turns on it with a file lock.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.reactive import reactive
from textual.widgets import Input, TextArea

from tests.support.fixtures import app_for, monkey_home  # noqa: F401 - fixtures (monkey_home autouse)
from tests.support.cli import init_git_workspace

SNAPSHOT_WORKSPACE = Path("/tmp/monkey-snapshots/proj")
"""Where every snapshot test's workspace is, on every machine."""


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """A real git repository with one commit, at :data:`SNAPSHOT_WORKSPACE`."""
    root = SNAPSHOT_WORKSPACE.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run on this machine waits for this test
        shutil.rmtree(SNAPSHOT_WORKSPACE, ignore_errors=True)
        try:
            yield init_git_workspace(SNAPSHOT_WORKSPACE, tmp_path)
        finally:
            shutil.rmtree(SNAPSHOT_WORKSPACE, ignore_errors=True)


@pytest.fixture(autouse=True)
def steady_cursors(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor is drawn or not depending on when the screenshot is taken: keep it on."""
    for cls in (Input, TextArea):
        steady = reactive(False, init=False)
        steady.__set_name__(cls, "cursor_blink")
        monkeypatch.setattr(cls, "cursor_blink", steady)
