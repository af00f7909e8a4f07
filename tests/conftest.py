"""Fixtures shared by the whole suite: temporary workspaces, an isolated monkey home, the
``monkey`` CLI and the app on a scripted model, a tmux server per test; and the markers by fixture.
Helpers to import are in tests/support/; a conftest.py holds fixtures and hooks only, and no
test imports one."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.cli import ROOT, Run, init_git_workspace, invoke, run_monkey, write_script
from tests.support.fixtures import app_for, monkey_home  # noqa: F401 - fixtures, shared with snapshots/

settings.register_profile("monkey", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("monkey")
"""Property tests check what holds, not how fast examples come: no deadline, and a slow draw on a
loaded machine is not a failure."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A real git repository with one commit, inside a parent folder with room for siblings."""
    return init_git_workspace(tmp_path / "proj", tmp_path)


@pytest.fixture
def scripted(workspace: Path, monkey_home: Path, tmp_path: Path):  # noqa: F811 - the fixture, imported above
    """Run a scripted task in ``workspace``: ``scripted(turns, *flags) -> Run``, in this process;
    ``process=True`` starts ``monkey`` as a real process (signals, pipes, process trees)."""

    def run(
        turns: list[dict[str, Any]], *flags: str, fmt: str = "stream-json", process: bool = False, **kw: Any
    ) -> Run:
        script = write_script(tmp_path / "script.json", turns)
        args = [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            fmt,
            *flags,
        ]
        if not any(f in ("-t", "--task") for f in flags):
            args += ["--task", "do the thing"]
        return run_monkey(args, home=monkey_home, **kw) if process else invoke(args, home=monkey_home, **kw)

    return run


@pytest.fixture
def tmux(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tmux server of this test's own: every ``tmux`` the test runs (and its children) finds it
    through ``TMUX_TMPDIR``, so runs in parallel never share sessions; it is killed afterwards.
    The folder is a short one under /tmp (a socket's path has a length limit)."""
    folder = Path(tempfile.mkdtemp(prefix="monkey-tmux-", dir="/tmp"))
    monkeypatch.setenv("TMUX_TMPDIR", str(folder))
    monkeypatch.delenv("TMUX", raising=False)  # a test run from inside tmux must not reach that server
    try:
        yield folder
    finally:
        subprocess.run(["tmux", "kill-server"], capture_output=True, env={**os.environ, "TMUX_TMPDIR": str(folder)})
        shutil.rmtree(folder, ignore_errors=True)


MARK_BY_FIXTURE = {"tmux": "tmux", "llama": "local_model", "llama_url": "local_model"}
"""Fixtures that make a test of a kind: a test using one (directly or through another fixture) is marked."""


GROUP_BY_FIXTURE = {"install": "script_plugin"}
"""Fixtures whose tests look for their processes by a shared command line (the script plugin's path, in
``/proc``): one xdist worker runs them one after the other, so one test never sees another's process."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that use a fixture of a kind (``-m "not local_model"`` then leaves them out)."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in MARK_BY_FIXTURE:
                item.add_marker(MARK_BY_FIXTURE[fixture])
            if fixture in GROUP_BY_FIXTURE:
                item.add_marker(pytest.mark.xdist_group(GROUP_BY_FIXTURE[fixture]))


WRITE_WHILE_COLLECTING = sys.dont_write_bytecode
"""Whether this run writes bytecode only while it collects (where Python is told not to write it)."""


def pytest_configure(config: pytest.Config) -> None:
    """Where bytecode is not written (``PYTHONDONTWRITEBYTECODE=1``, as in many containers), write it for
    the test run's own files all the same; Python and pytest read the ``__pycache__`` files back and git
    ignores them:

    - monkey's modules and the helpers, compiled once before any test starts ``monkey``: else every
      ``python -m monkey`` the tests start would compile them from source again (about 0.4 s of CPU each);
    - the test modules as pytest rewrites their asserts, while the suite is collected: rewriting is about
      half of collection's CPU, and a run that finds them rewritten skips it."""
    if not WRITE_WHILE_COLLECTING:
        return  # Python writes them itself
    sys.dont_write_bytecode = False  # until the end of collection (pytest_collection_finish)
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller compiled monkey
    import compileall

    for folder in ("monkey", "tests/support"):  # what the processes the tests start import
        compileall.compile_dir(str(ROOT / folder), quiet=2)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collection is over: the tests run as Python was told (no bytecode written), and what collection
    made (modules, classes, the test items: about 190,000 objects) is left out of the garbage collector's
    full collections, which every in-process command ends with (:func:`tests.support.cli.invoke`) and
    Python runs by itself: each walked them all again (0.2-0.3 s of CPU), though none of them ever dies."""
    if WRITE_WHILE_COLLECTING:
        sys.dont_write_bytecode = True
    gc.collect()
    gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject) spreads a run of folders over one worker more than there are cores: about a
    fifth of the suite's time is spent waiting (on a process, a server, a terminal, a browser), and the
    extra worker runs meanwhile. A run of named test files (``pytest tests/x.py -k y``) stays in one
    process, which starts sooner; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still chooses the count."""
    args = [a.split("::")[0] for a in config.args]
    if args and all(a.endswith(".py") for a in args):
        return 0
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist reads it
    return len(os.sched_getaffinity(0)) + 1
