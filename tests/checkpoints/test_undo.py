"""Checkpoints and undo in-process, in real git repositories and plain folders."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monkey.checkpoints.api import Checkpoints, parse_size
from monkey.checkpoints.undo import UndoConflict, UndoError
from monkey.events import UndoApplied, decode, encode
from tests.support.checkpoints import change, tree_digest


def test_file_changes_round_trip_exactly(cps: Checkpoints, any_ws: Path) -> None:
    g, ws = cps.guard, any_ws
    (ws / "bin.dat").write_bytes(bytes(range(256)) * 4)
    (ws / "empty.txt").write_bytes(b"")
    (ws / "nonl.txt").write_bytes(b"no newline at the end")
    (ws / "secret.txt").write_text("x\n")
    os.chmod(ws / "secret.txt", 0o600)
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    os.symlink("README.md", ws / "link")
    before = tree_digest(ws, skip=(".git",))
    change(g, ["bin.dat"], lambda: (ws / "bin.dat").write_bytes(b"\x00\x01new"))
    change(g, ["empty.txt"], lambda: (ws / "empty.txt").write_text("now full\n"))
    change(g, ["nonl.txt"], lambda: (ws / "nonl.txt").write_bytes(b"still none, changed"))
    change(g, ["secret.txt"], lambda: (ws / "secret.txt").write_text("y\n"))
    change(g, ["run.sh"], lambda: os.chmod(ws / "run.sh", 0o644), tool="shell_execute")
    change(g, ["link"], lambda: os.unlink(ws / "link"), tool="file_delete")
    change(g, ["new/deep/file.txt"], lambda: (os.makedirs(ws / "new/deep"), (ws / "new/deep/file.txt").write_text("n")))
    assert tree_digest(ws, skip=(".git",)) != before
    events: list[object] = []
    cps.emit = events.append
    outcome = cps.undo(steps=7)
    assert tree_digest(ws, skip=(".git",)) == before, "every byte, mode and link is back; created folders are gone"
    assert outcome.removed == ["new/deep/file.txt"] and outcome.restored == ["link"]
    assert isinstance(events[0], UndoApplied) and events[0].checkpoint_ids == outcome.checkpoint_ids
    assert decode(encode(events[0])) == events[0]
    with pytest.raises(UndoError, match="nothing to undo"):
        cps.undo()


def test_shell_changes_are_undone(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    (ws / ".gitattributes").write_text("* text eol=crlf\n*.bin filter=nope\n")
    (ws / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (ws / "gone.txt").write_text("delete me\n")
    (ws / "mode.sh").write_text("echo\n")
    before = tree_digest(ws, skip=(".git",))
    script = (
        "import os, pathlib as p\n"
        "p.Path('crlf.txt').write_bytes(b'changed\\n')\n"
        "os.remove('gone.txt')\n"
        "os.makedirs('out/sub')\n"
        "p.Path('out/sub/made.bin').write_bytes(b'\\x00made')\n"
        "os.chmod('mode.sh', 0o755)\n"
        "os.symlink('crlf.txt', 'alink')\n"
    )
    entry = change(
        cps.guard,
        None,
        lambda: subprocess.run([sys.executable, "-c", script], cwd=ws, check=True),
        tool="shell_execute",
    )
    stored = cps.guard.journal.get(entry.id)
    assert stored is not None and stored.state == "applied"
    assert sorted(stored.paths) == ["alink", "crlf.txt", "gone.txt", "mode.sh", "out/sub/made.bin"]
    cps.undo()
    assert tree_digest(ws, skip=(".git",)) == before


def test_ignored_and_untracked_files_survive_a_restore(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    (ws / ".gitignore").write_text(".env\nbuild/\n")
    (ws / "sub").mkdir()
    (ws / "sub" / ".gitignore").write_text("*.log\n")
    (ws / ".env").write_text("TOKEN=1\n")
    (ws / "build").mkdir()
    (ws / "build" / "big.data").write_bytes(os.urandom(1 << 16))
    (ws / "sub" / "trace.log").write_text("log\n")
    (ws / "notes.txt").write_text("mine\n")
    script = (
        "import pathlib as p\n"
        "p.Path('.env').write_text('TOKEN=2\\n')\n"
        "p.Path('build/out.o').write_text('obj')\n"
        "p.Path('sub/trace.log').write_text('more')\n"
        "p.Path('tracked.txt').write_text('t')\n"
    )
    first = change(
        cps.guard,
        None,
        lambda: subprocess.run([sys.executable, "-c", script], cwd=ws, check=True),
        tool="shell_execute",
    )
    change(cps.guard, ["notes2.txt"], lambda: (ws / "notes2.txt").write_text("by monkey"))
    (ws / "untracked-later.txt").write_text("made by the user\n")
    stored = cps.guard.journal.get(first.id)
    assert stored is not None and stored.paths == ["tracked.txt"], "ignored files are not recorded"
    indexed = cps.guard.shadow.git("ls-files").decode().split()
    assert ".env" not in indexed and "sub/trace.log" not in indexed and "build/big.data" not in indexed
    cps.restore(first.id)
    assert not (ws / "tracked.txt").exists() and not (ws / "notes2.txt").exists()
    assert (ws / ".env").read_text() == "TOKEN=2\n", "ignored files are never rewritten"
    assert (ws / "build" / "out.o").exists() and (ws / "build" / "big.data").stat().st_size == 1 << 16
    assert (ws / "sub" / "trace.log").read_text() == "more"
    assert (ws / "notes.txt").read_text() == "mine\n"
    assert (ws / "untracked-later.txt").exists()


def test_undo_after_an_external_edit_refuses_then_force(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    change(cps.guard, ["a.txt"], lambda: (ws / "a.txt").write_text("monkey\n"))
    change(cps.guard, ["README.md"], lambda: (ws / "README.md").write_text("# edited by monkey\n"))
    (ws / "a.txt").write_text("the user's own edit\n")
    with pytest.raises(UndoConflict) as info:
        cps.undo(steps=2)
    [conflict] = info.value.conflicts
    assert conflict.path == "a.txt" and "-monkey" in conflict.diff and "+the user's own edit" in conflict.diff
    assert (ws / "README.md").read_text() == "# edited by monkey\n", "all or nothing: README untouched"
    outcome = cps.undo(steps=2, force=True)
    assert outcome.forced and outcome.overwritten == ["a.txt"]
    assert not (ws / "a.txt").exists() and (ws / "README.md").read_text() == "# proj\n"


def test_a_failed_write_puts_everything_back(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("in d\n")
    change(cps.guard, ["README.md"], lambda: (ws / "README.md").write_text("changed\n"))
    change(cps.guard, ["d/f.txt"], lambda: (ws / "d" / "f.txt").unlink(), tool="file_delete")
    (ws / "d").rmdir()
    (ws / "d").write_text("a file where the folder was")  # restoring d/f.txt must fail
    with pytest.raises(UndoError, match="put back"):
        cps.undo(steps=2)
    assert (ws / "README.md").read_text() == "changed\n"
    assert [e.state for e in cps.entries()] == ["applied", "applied"]


def test_undo_session_to_and_listing(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    a = change(cps.guard, ["one.txt"], lambda: (ws / "one.txt").write_text("1\n"), session="s1")
    change(cps.guard, ["two.txt"], lambda: (ws / "two.txt").write_text("2\n"), session="s2")
    change(cps.guard, ["three.txt"], lambda: (ws / "three.txt").write_text("3\n"), session="s1")
    infos = cps.list()
    assert [i.paths for i in infos] == [["one.txt"], ["two.txt"], ["three.txt"]]
    assert infos[0].added == 1 and infos[0].tool == "file_write"
    assert [i.id for i in cps.list(session_id="s2")] == [infos[1].id]
    assert "+1" in cps.show(a.id) and "one.txt" in cps.show(a.id[-12:])
    cps.undo(session_id="s1")
    assert not (ws / "one.txt").exists() and not (ws / "three.txt").exists() and (ws / "two.txt").exists()
    with pytest.raises(UndoError, match="no checkpoint"):
        cps.restore("nope")
    cps.restore(a.id)  # two.txt came after a: it goes too
    assert not (ws / "two.txt").exists()
    assert "undoable" in cps.status()


def test_gc_prunes_and_reports_size(cps: Checkpoints, any_ws: Path) -> None:
    ws = any_ws
    for i in range(4):
        change(cps.guard, [f"f{i}.bin"], lambda i=i: (ws / f"f{i}.bin").write_bytes(os.urandom(20_000)))
    assert cps.gc(keep_days=1).removed == []
    result = cps.gc(max_size=30_000)
    assert result.removed and result.size_after < result.size_before
    kept = cps.entries()
    assert len(kept) < 4
    cps.undo(steps=len(kept))  # what is left still undoes
    result = cps.gc(keep_days=0)
    assert cps.entries() == [] and result.size_after <= 30_000 + 8192
    assert parse_size("500M") == 500 * 1024**2 and parse_size("1.5 GB") == int(1.5 * 1024**3)
    with pytest.raises(ValueError):
        parse_size("lots")


def test_large_files_round_trip(monkey_home: Path, any_ws: Path) -> None:
    cps = Checkpoints(any_ws, home=monkey_home, max_file_size=1000)
    big = os.urandom(5000)
    (any_ws / "big.bin").write_bytes(big)
    assert cps.guard.oversized(["big.bin", "README.md"])[0].startswith("big.bin is 4.9 KB")
    change(cps.guard, ["big.bin"], lambda: (any_ws / "big.bin").write_bytes(b"small"))
    cps.undo()
    assert (any_ws / "big.bin").read_bytes() == big
    entry = change(cps.guard, None, lambda: (any_ws / "big.bin").write_bytes(b"x" * 3000), tool="shell_execute")
    stored = cps.guard.journal.get(entry.id)
    assert stored is not None and "big.bin" in stored.note, "left out of shell snapshots, and said so"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=5))
def test_any_sequence_of_contents_undoes_to_the_start(
    cps: Checkpoints, any_ws: Path, contents: list[bytes | None]
) -> None:
    target = any_ws / "p.bin"
    start = target.read_bytes() if target.exists() else None
    for data in contents:

        def do(data: bytes | None = data) -> None:
            if data is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(data)

        change(cps.guard, ["p.bin"], do)
    applied = [e for e in cps.entries() if e.state == "applied"]
    if applied:
        cps.undo(steps=len(applied))
    assert (target.read_bytes() if target.exists() else None) == start
    assert stat.S_ISREG(target.lstat().st_mode) if start is not None else not target.exists()


def test_undo_never_writes_through_a_symlink_out_of_the_workspace(
    cps: Checkpoints, any_ws: Path, tmp_path: Path
) -> None:
    ws = any_ws
    (ws / "d").mkdir()
    change(cps.guard, ["d/f.txt"], lambda: (ws / "d" / "f.txt").write_text("monkey\n"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("monkey\n")
    (ws / "d" / "f.txt").unlink()
    (ws / "d").rmdir()
    os.symlink(outside, ws / "d")  # the folder now leads out of the workspace
    with pytest.raises(UndoError, match="outside the workspace"):
        cps.undo(force=True)
    assert (outside / "f.txt").read_text() == "monkey\n"


@pytest.mark.subprocess
def test_pending_entries_of_a_live_process_are_left_alone(cps: Checkpoints, any_ws: Path, monkey_home: Path) -> None:
    code = (
        "import sys\nfrom pathlib import Path\nfrom monkey.checkpoints.guard import CheckpointGuard\n"
        "g = CheckpointGuard(Path(sys.argv[1]), home=Path(sys.argv[2]))\n"
        "g.begin(tool='file_write', paths=['x.txt'], session_id='s', turn=1, call_id='c')\n"
        "print('ready', flush=True)\nsys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(any_ws), str(monkey_home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert cps.guard.repair() == [], "another monkey is still working on it"
    finally:
        proc.kill()
        proc.wait()
    [message] = cps.guard.repair()
    assert "nothing was changed" in message
    assert [e.state for e in cps.entries()] == ["abandoned"]
