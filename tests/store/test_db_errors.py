"""The database when things go wrong: a full disk, a read-only home, a damaged file, a newer monkey.

Real file systems: a small tmpfs mounted for the test (root only; skipped elsewhere), filled
with a real file or remounted read-only. Every failure must be one clear line on stderr, no
traceback, and nothing half-done (the workspace and the database file as they were).
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from monkey.checkpoints.journal import MIGRATIONS as JOURNAL_MIGRATIONS
from monkey.checkpoints.journal import Journal
from monkey.db import FILE_SCHEMA, DatabaseError, db_path
from monkey.store import SessionStore, StoreError
from monkey.store.schema import MIGRATIONS as STORE_MIGRATIONS
from tests.support.cli import init_git_workspace, invoke, invoke_async, run_monkey, write_script

WRITE = [
    {"text": "Writing.", "tool_calls": [{"name": "file_write", "arguments": {"path": "b.txt", "content": "monkey\n"}}]},
    {"text": "done"},
]
DELETE = [
    {"text": "Deleting.", "tool_calls": [{"name": "file_delete", "arguments": {"path": "big.txt"}}]},
    {"text": "done"},
]


def task(
    home: Path,
    workspace: Path,
    tmp_path: Path,
    turns: list,
    name: str = "s.json",
    *,  # type: ignore[no-untyped-def]
    process: bool = False,
):
    """A headless task, in this process; ``process=True`` in one of its own (which holds nothing open
    when it ends, and whose first open of the database checks its pages)."""
    script = write_script(tmp_path / name, turns)
    args = [
        "agent",
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--cwd",
        str(workspace),
        "--no-approval",
        "--task",
        "do it",
    ]
    return run_monkey(args, home=home) if process else invoke(args, home=home)


def one_clear_line(stderr: str, text: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert text in stderr, stderr
    line = next(line for line in stderr.splitlines() if text in line)
    assert line.startswith("monkey: "), stderr


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of its own, unmounted at the end."""
    where = tmp_path / "fs"
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {made.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(fs: Path) -> None:
    """Write until the file system is full (a real ENOSPC)."""
    with open(fs / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


def remount_readonly(fs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)


def test_file_schema_counts_every_migration() -> None:
    assert len(STORE_MIGRATIONS) + len(JOURNAL_MIGRATIONS) == FILE_SCHEMA, (
        "a component got a migration: add one to monkey.db.FILE_SCHEMA"
    )


async def test_a_newer_file_is_refused_whole_and_never_written(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    assert (await asyncio.to_thread(task, monkey_home, workspace, tmp_path, WRITE)).returncode == 0
    path = db_path(monkey_home)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {FILE_SCHEMA + 1}")  # a newer monkey, whose components look known
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match="newer monkey"):
        await SessionStore.open()
    with pytest.raises(DatabaseError, match="newer monkey"):
        Journal(path)
    for args in (["sessions", "list"], ["undo", "--cwd", str(workspace)]):
        run = await invoke_async(args, home=monkey_home)
        assert run.returncode == 1
        one_clear_line(run.stderr, "was written by a newer monkey (file schema")
    run = await asyncio.to_thread(task, monkey_home, workspace, tmp_path, WRITE)
    assert "Traceback" not in run.stderr and "newer monkey" in run.stderr
    assert digest(path) == before
    assert (workspace / "b.txt").read_text() == "monkey\n"  # not undone, not written again


def test_a_page_corrupt_database_is_found_at_open_and_never_written(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    for i in range(3):  # in processes of their own: this process's first open of the file comes after the damage
        assert (
            task(monkey_home, workspace, tmp_path, [{"text": "x" * 3000}], f"s{i}.json", process=True).returncode == 0
        )
    path = db_path(monkey_home)
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert pages > 4
    data = bytearray(path.read_bytes())
    start = (pages - 2) * page_size  # a page of the tables, not the header: opening alone does not see it
    data[start : start + page_size] = bytes([0x5A]) * page_size
    path.write_bytes(bytes(data))
    before = digest(path)
    run = invoke(["sessions", "list", "--all"], home=monkey_home)
    assert run.returncode == 1
    one_clear_line(run.stderr, "is damaged (quick_check:")
    run = task(monkey_home, workspace, tmp_path, WRITE)
    assert "Traceback" not in run.stderr and "is damaged" in run.stderr
    assert not (workspace / "b.txt").exists()  # without a working journal no change is made
    run = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 1
    one_clear_line(run.stderr, "is damaged")
    assert digest(path) == before


def test_a_full_home(small_fs: Path, workspace: Path, tmp_path: Path) -> None:
    home = small_fs / "home"
    assert task(home, workspace, tmp_path, WRITE).returncode == 0
    before = (workspace / "b.txt").read_text()
    fill(small_fs)
    run = task(
        home,
        workspace,
        tmp_path,
        [
            {
                "text": "Again.",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "c.txt", "content": "c\n"}}],
            },
            {"text": "done"},
        ],
        "again.json",
    )
    one_clear_line(run.stderr, f"no space left on device: 0 KB free in {home}")
    assert not (workspace / "c.txt").exists()  # no journal, no change
    listing = invoke(["sessions", "list", "--cwd", str(workspace)], home=home)
    assert listing.returncode == 0, listing.stderr  # reading still works
    assert "completed" in listing.stdout
    run = invoke(["undo", "--cwd", str(workspace)], home=home)
    assert run.returncode == 1
    one_clear_line(run.stderr, f"no space left on device: 0 KB free in {home}")
    assert (workspace / "b.txt").read_text() == before  # nothing half-done
    (small_fs / "filler").unlink()
    run = invoke(["undo", "--cwd", str(workspace)], home=home)
    assert run.returncode == 0, run.stderr
    assert not (workspace / "b.txt").exists()


def test_a_full_workspace_undo_says_so_and_puts_everything_back(
    small_fs: Path, monkey_home: Path, tmp_path: Path
) -> None:
    workspace = small_fs / "proj"
    init_git_workspace(workspace, tmp_path / "git-home")
    (workspace / "big.txt").write_text("line of text\n" * 40000)  # ~500 KB
    assert task(monkey_home, workspace, tmp_path, DELETE).returncode == 0
    assert not (workspace / "big.txt").exists()
    fill(small_fs)
    run = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 1
    one_clear_line(run.stderr, f"(no space left on device: 0 KB free in {workspace})")
    assert not (workspace / "big.txt").exists()
    assert not [p.name for p in workspace.iterdir() if p.name.startswith(".monkey-")]  # no temporary left
    (small_fs / "filler").unlink()
    run = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 0, run.stderr
    assert (workspace / "big.txt").read_text() == "line of text\n" * 40000


def test_a_read_only_home(small_fs: Path, workspace: Path, tmp_path: Path) -> None:
    home = small_fs / "home"
    # in a process of its own: the file system is remounted read-only only with nothing open on it
    assert task(home, workspace, tmp_path, WRITE, process=True).returncode == 0
    remount_readonly(small_fs)
    listing = invoke(["sessions", "list", "--cwd", str(workspace)], home=home)
    assert listing.returncode == 0, listing.stderr
    assert "completed" in listing.stdout
    sid = listing.stdout.split()[0]
    shown = invoke(["sessions", "show", sid], home=home)
    assert shown.returncode == 0, shown.stderr
    run = invoke(["undo", "--cwd", str(workspace)], home=home)
    assert run.returncode == 1
    one_clear_line(run.stderr, "the file system is read-only")
    assert (workspace / "b.txt").read_text() == "monkey\n"
    run = task(home, workspace, tmp_path, WRITE, "again.json")
    assert "Traceback" not in run.stderr and "read-only" in run.stderr
