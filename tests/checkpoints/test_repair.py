"""Repair that only repairs: an interrupted undo, a stale shadow index lock, temporary files.

Real monkey processes, killed at a deterministic point (the undo's fault-injection variable),
on real git repositories.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.undo import FAULT_KILL_AFTER
from tests.support.checkpoints import agent, py
from tests.support.script import call_turn
from tests.support.cli import ROOT, invoke, monkey_env, run_monkey


def temp_files(ws: Path) -> list[str]:
    return sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.name.endswith((".monkey-tmp", ".monkey-undo")))


@pytest.mark.subprocess
def test_a_killed_undo_is_completed_exactly_and_nothing_older_is_undone(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "x.txt").write_text("the person's x\n")
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [
            call_turn("file_write", path="keep.txt", content="oldest change\n"),
            call_turn("file_write", path="b.txt", content="made by monkey\n"),
            call_turn("file_write", path="x.txt", content="monkey's x\n"),
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    killed = run_monkey(["undo", "--steps", "2", "--cwd", str(workspace)], home=monkey_home, **{FAULT_KILL_AFTER: "1"})
    assert killed.returncode == -9, killed.stderr
    assert not (workspace / "b.txt").exists(), "the first file of the undo was done"
    assert (workspace / "x.txt").read_text() == "monkey's x\n", "the second was not"
    assert len(temp_files(workspace)) == 1, "the kill left the undo's temporary copy"

    again = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert again.returncode == 0, again.stderr
    assert "completed the interrupted undo" in again.stdout and "nothing more was undone" in again.stdout
    assert (workspace / "x.txt").read_text() == "the person's x\n"
    assert (workspace / "keep.txt").read_text() == "oldest change\n", "the older change was not undone"
    assert temp_files(workspace) == [], again.stderr
    assert "temporary file" in again.stderr
    listing = json.loads(invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    assert [c["state"] for c in listing["checkpoints"]] == ["applied", "undone", "undone"]
    third = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert third.returncode == 0 and not (workspace / "keep.txt").exists(), "a new undo undoes the next one"


def test_a_change_killed_mid_write_leaves_no_temporary_file(workspace: Path, monkey_home: Path) -> None:
    code = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from monkey.checkpoints.guard import CheckpointGuard
        ws = Path({str(workspace)!r})
        guard = CheckpointGuard(ws, home=Path({str(monkey_home)!r}))
        guard.begin(tool="file_write", paths=["src/a.txt"], session_id="s", turn=1, call_id="c")
        (ws / "src").mkdir()
        (ws / "src" / ".a.txt.0123abcd.monkey-tmp").write_text("half")  # what file_write writes first
        os._exit(0)  # as if killed before the rename
    """)
    subprocess.run([sys.executable, "-c", code], check=True, env=monkey_env(monkey_home))
    (workspace / "src" / ".a.txt.notmine.monkey-tmp").write_text("not monkey's shape")
    listing = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home)
    assert listing.returncode == 0, listing.stderr
    assert "repaired checkpoint" in listing.stderr and "src/.a.txt.0123abcd.monkey-tmp" in listing.stderr
    assert temp_files(workspace) == ["src/.a.txt.notmine.monkey-tmp"]


@pytest.mark.subprocess
def test_a_stale_index_lock_is_removed_and_a_held_one_is_named(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [call_turn("shell_execute", command=py("open('a','w').write('1')"))],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    lock = CheckpointGuard(workspace, home=monkey_home).shadow.git_dir / "index.lock"
    lock.write_text("")  # what a git killed during a snapshot leaves
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [call_turn("shell_execute", command=py("open('b','w').write('2')"))],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    assert "stale lock" in run.stderr and not lock.exists()
    results = run.of_type("tool_result")
    assert results and results[0]["ok"], results
    assert (workspace / "b").exists()

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"f = open({str(lock)!r}, 'w'); print('held', flush=True); import sys; sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        run = agent(
            workspace,
            monkey_home,
            tmp_path,
            [call_turn("shell_execute", command=py("open('c','w').write('3')"))],
            "--no-approval",
        )
        [result] = run.of_type("tool_result")
        assert not result["ok"] and f"pid {holder.pid}" in result["output"], result
        assert lock.exists(), "a lock a live process holds is never removed"
        assert not (workspace / "c").exists(), "no checkpoint, no command"
    finally:
        holder.communicate(b"")


def test_owner_locks_of_long_gone_processes_are_removed(workspace: Path, monkey_home: Path) -> None:
    """A dead process's owner lock with nothing pending goes once it is an hour old; a fresh one
    (a process may be taking it right now) and a live process's lock stay."""
    import fcntl
    import os
    import time

    guard = CheckpointGuard(workspace, home=monkey_home)
    owners = guard.shadow.root / "owners"
    owners.mkdir(parents=True)
    old, fresh, live = owners / "1-dead.lock", owners / "2-dead.lock", owners / "3-live.lock"
    for path in (old, fresh, live, owners / "1-dead.lock.guard"):
        path.write_text("")
    hour_ago = time.time() - 3700
    for path in (old, live):
        os.utime(path, (hour_ago, hour_ago))
    fd = os.open(live, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a running monkey holds its own
    try:
        guard.repair()
    finally:
        os.close(fd)
    assert sorted(p.name for p in owners.iterdir()) == ["2-dead.lock", "3-live.lock"]
