"""Shell commands' snapshots brought forward from the write watch: the same records as full
snapshots, undone exactly, and nothing someone else wrote claimed. Real git, real files, the
real fanotify watch (skipped where it cannot run), real monkey processes for the person's writes.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from monkey.checkpoints.api import Checkpoints
from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.journal import Entry
from monkey.checkpoints.watch import DISABLE_ENV, FORGOTTEN, LINKED_OUTSIDE
from tests.support.checkpoints import finish, py, start_agent, tree_digest, wait_for, waiting_command
from tests.support.watch import HAS_WATCH
from tests.support.script import call_turn
from tests.support.cli import invoke

needs_watch = pytest.mark.skipif(not HAS_WATCH, reason="needs fanotify and the process connector (root on Linux)")
pytestmark = pytest.mark.xdist_group("live-watch")
"""On one worker: the watch marks the whole filesystem, and a file written here through its second
hard link (below) makes every other test's watch unsure while it runs (see ``Counted``)."""


class Counted:
    """Counts the guard's full snapshots (the fast path takes none once it has a base), and why
    each one was taken."""

    def __init__(self, guard: CheckpointGuard) -> None:
        self.full = 0
        self.because: list[str] = []
        real = guard.shadow.snapshot

        def snapshot(max_size: int):  # type: ignore[no-untyped-def]
            self.full += 1
            self.because.append(guard.full_because)
            return real(max_size)

        guard.shadow.snapshot = snapshot  # type: ignore[method-assign]

    def only_the_first(self) -> None:
        """No full snapshot after the first, but for a reason no test can prevent: the watch
        marks a whole filesystem, where other processes (the other test workers) may overflow its
        queue or write a file with several hard links; monkey then rightly takes a full one."""
        assert self.full >= 1
        assert all(why in (FORGOTTEN, LINKED_OUTSIDE) for why in self.because[1:]), self.because


def shell(guard: CheckpointGuard, do: Callable[[], object], *, turn: int = 1) -> Entry:
    entry = guard.begin(tool="shell_execute", paths=None, session_id="s1", turn=turn, call_id=f"c{turn}")
    do()
    assert guard.finish(entry, ok=True) == ""
    stored = guard.journal.get(entry.id)
    assert stored is not None
    return stored


def seed(ws: Path) -> None:
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "edit.txt").write_text("edit me\n")
    (ws / "gone.txt").write_text("delete me\n")
    (ws / "old_name.txt").write_text("rename me\n")
    (ws / "run.sh").write_text("echo hi\n")
    (ws / "pkg" / "inner").mkdir(parents=True)
    (ws / "pkg" / "inner" / "mod.py").write_text("x = 1\n")
    (ws / "pkg" / "keep.py").write_text("y = 2\n")
    (ws / "keep.log").write_text("ignored, the person's\n")


def command(ws: Path) -> None:
    """What a shell command might do: every kind of change at once."""
    (ws / "edit.txt").write_text("edited\n")
    os.remove(ws / "gone.txt")
    os.rename(ws / "old_name.txt", ws / "new_name.txt")
    os.rename(ws / "pkg" / "inner", ws / "pkg" / "moved")
    (ws / "made.txt").write_text("new\n")
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / "file.txt").write_text("in a new folder\n")
    (ws / "empty" / "folder").mkdir(parents=True)
    os.chmod(ws / "run.sh", 0o755)
    os.symlink("edit.txt", ws / "link")
    (ws / "out.log").write_text("ignored, the command's\n")
    (ws / "build").mkdir()
    (ws / "build" / "app.bin").write_bytes(b"\x00ignored folder")


EXPECTED = [
    "deep/er/file.txt",
    "edit.txt",
    "empty/",
    "gone.txt",
    "link",
    "made.txt",
    "new_name.txt",
    "old_name.txt",
    "pkg/inner/mod.py",
    "pkg/moved/mod.py",
    "run.sh",
]


def records(entry: Entry) -> list[tuple[str, str | None, str | None, int, int, list[str], str]]:
    return sorted(
        (r.path, r.before_sha, r.after_sha, r.before_mode, r.after_mode, r.created_dirs, r.unattributed)
        for r in entry.files
    )


@needs_watch
def test_every_kind_of_change_is_recorded_as_a_full_snapshot_would_and_undone_exactly(
    any_ws: Path, tmp_path: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(any_ws)
    cps = Checkpoints(any_ws, home=monkey_home)
    counted = Counted(cps.guard)
    shell(cps.guard, lambda: None, turn=0)  # the first snapshot of this process is a full one
    assert cps.guard.watching
    counted.only_the_first()
    before = tree_digest(any_ws, skip=(".git",))
    entry = shell(cps.guard, lambda: command(any_ws))
    counted.only_the_first()  # brought forward from the watch, no full snapshot
    assert sorted(r.path for r in entry.files) == EXPECTED
    assert not any(r.unattributed for r in entry.files), records(entry)
    assert entry.unrecorded == []
    assert cps.guard.shadow.snapshot(cps.guard.max_file_size)[0] == entry.after_tree, "the tree a full snapshot sees"

    # the same command in a copy of the workspace, with full snapshots only, records the same
    monkeypatch.setenv(DISABLE_ENV, "1")
    twin = tmp_path / "twin"
    twin.mkdir()
    seed(twin)
    full = Checkpoints(twin, home=tmp_path / "twin-home")
    assert not any(r.unattributed for r in shell(full.guard, lambda: None, turn=0).files)
    full_entry = shell(full.guard, lambda: command(twin))
    assert not full.guard.watching
    assert [r[:6] for r in records(full_entry)] == [r[:6] for r in records(entry)]
    monkeypatch.delenv(DISABLE_ENV)

    outcome = cps.undo()
    assert outcome.left_alone == []
    assert tree_digest(any_ws, skip=(".git",)) == {
        **before,
        "out.log": tree_digest(any_ws)["out.log"],
        "build": tree_digest(any_ws)["build"],
        "build/app.bin": tree_digest(any_ws)["build/app.bin"],
    }, "exactly as before, the ignored files aside"
    assert not (any_ws / "empty").exists() and not (any_ws / "deep").exists()
    assert (any_ws / "keep.log").read_text() == "ignored, the person's\n"


@needs_watch
def test_between_commands_the_tree_follows_every_writer(any_ws: Path, monkey_home: Path) -> None:
    """Writes between two commands (a person's, monkey's own file tools, an undo) are in the next
    command's snapshot before, so its undo puts back what was there just before it ran."""
    seed(any_ws)
    cps = Checkpoints(any_ws, home=monkey_home)
    counted = Counted(cps.guard)
    shell(cps.guard, lambda: (any_ws / "edit.txt").write_text("first command\n"), turn=0)
    (any_ws / "edit.txt").write_text("the person's, between the commands\n")
    (any_ws / "pkg" / "keep.py").unlink()
    (any_ws / "person.txt").write_text("the person's new file\n")
    entry = shell(
        cps.guard, lambda: ((any_ws / "edit.txt").write_text("second command\n"), (any_ws / "person.txt").unlink())
    )
    counted.only_the_first()
    assert sorted(r.path for r in entry.files) == ["edit.txt", "person.txt"]
    cps.undo()
    assert (any_ws / "edit.txt").read_text() == "the person's, between the commands\n"
    assert (any_ws / "person.txt").read_text() == "the person's new file\n"
    assert not (any_ws / "pkg" / "keep.py").exists()


@needs_watch
def test_a_file_hard_linked_from_outside_is_read_again(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    """A file with another name outside the workspace can change with no event of its own: its
    change is never lost from the snapshot before the next command."""
    (workspace / "shared.txt").write_text("one\n")
    outside = tmp_path / "outside-link.txt"
    os.link(workspace / "shared.txt", outside)
    cps = Checkpoints(workspace, home=monkey_home)
    shell(cps.guard, lambda: None, turn=0)
    with open(outside, "w") as fh:  # the same file, written through its other name
        fh.write("two, written outside\n")
    entry = shell(cps.guard, lambda: (workspace / "shared.txt").write_text("three, by the command\n"))
    [rec] = entry.files
    assert cps.guard.shadow.read_blob(rec.before_sha or "") == b"two, written outside\n"
    cps.undo()
    assert (workspace / "shared.txt").read_text() == "two, written outside\n"


@needs_watch
def test_a_repository_made_inside_falls_back_to_a_full_snapshot(workspace: Path, monkey_home: Path) -> None:
    cps = Checkpoints(workspace, home=monkey_home)
    counted = Counted(cps.guard)
    shell(cps.guard, lambda: None, turn=0)
    (workspace / "vendor").mkdir()
    (workspace / "vendor" / "x.txt").write_text("x\n")
    before = counted.full
    entry = shell(cps.guard, lambda: os.mkdir(workspace / "vendor" / ".git"))
    assert counted.full > before, "a full snapshot, not a guess"
    assert counted.because[-1] in ("a repository made or removed", FORGOTTEN, LINKED_OUTSIDE), counted.because
    assert any(p.startswith("vendor/") for p, _ in entry.unrecorded), entry.unrecorded


@needs_watch
def test_a_persons_writes_during_a_later_command_are_never_undone(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """The second of two commands in one monkey process (its snapshot before is brought forward):
    the person edits, creates, deletes and renames while it runs; undo reverts only the command's."""
    for name in ("notes.txt", "drop.txt", "move.txt"):
        (workspace / name).write_text(f"the person's {name}\n")
    first = call_turn("shell_execute", command=py("open('first.txt', 'w').write('1')"))
    second = call_turn("shell_execute", command=waiting_command(tmp_path, "b", "made.txt"), timeout=120)
    proc = start_agent(workspace, monkey_home, tmp_path, "b", [first, second])
    wait_for(workspace / "made.txt", proc)
    (workspace / "notes.txt").write_text("the person's notes, edited meanwhile\n")
    (workspace / "person.txt").write_text("typed by the person meanwhile\n")
    (workspace / "drop.txt").unlink()
    os.rename(workspace / "move.txt", workspace / "moved.txt")
    (tmp_path / "b.go").write_text("")
    finish(proc)

    listing = json.loads(invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    last = listing["checkpoints"][-1]
    assert sorted(last["paths"]) == ["drop.txt", "made.txt", "move.txt", "moved.txt", "notes.txt", "person.txt"]
    assert sorted(last["not_attributable"]) == ["drop.txt", "move.txt", "moved.txt", "notes.txt", "person.txt"]
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists()
    assert (workspace / "first.txt").exists(), "only the latest command was undone"
    assert (workspace / "notes.txt").read_text() == "the person's notes, edited meanwhile\n"
    assert (workspace / "person.txt").read_text() == "typed by the person meanwhile\n"
    assert not (workspace / "drop.txt").exists() and not (workspace / "move.txt").exists()
    assert (workspace / "moved.txt").read_text() == "the person's move.txt\n"


@needs_watch
def test_a_moved_folders_files_are_not_claimed_when_someone_else_wrote_meanwhile(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a\n")
    script = tmp_path / "move.py"
    script.write_text(
        "import os, pathlib, time\n"
        "os.rename('src', 'lib')\n"
        f"go = pathlib.Path({str(tmp_path / 'm.go')!r})\n"
        "pathlib.Path('started').write_text('')\n"
        "while not go.exists(): time.sleep(0.02)\n"
        "os.remove('started')\n"
    )
    proc = start_agent(
        workspace,
        monkey_home,
        tmp_path,
        "m",
        [call_turn("shell_execute", command=f"{sys.executable} {script}", timeout=120)],
    )
    wait_for(workspace / "started", proc)
    (workspace / "lib" / "a.py").write_text("a, edited by the person in the moved folder\n")
    (tmp_path / "m.go").write_text("")
    finish(proc)
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert (workspace / "lib" / "a.py").read_text() == "a, edited by the person in the moved folder\n"


def test_without_the_watch_every_snapshot_is_a_full_one(
    workspace: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DISABLE_ENV, "1")
    cps = Checkpoints(workspace, home=monkey_home)
    counted = Counted(cps.guard)
    entry = shell(cps.guard, lambda: (workspace / "made.txt").write_text("x\n"))
    assert not cps.guard.watching and counted.full == 2
    assert [r.path for r in entry.files] == ["made.txt"]
    cps.undo()
    assert not (workspace / "made.txt").exists()
    assert stat.S_ISDIR(os.lstat(workspace).st_mode)
