"""The checkpoint commands as a person runs them: real monkey processes on real repositories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey.checkpoints.guard import BEAT
from monkey.children import death_mark
from tests.support.checkpoints import agent, git, py, tree_digest
from tests.support.cli import invoke, monkey_env, write_script
from tests.support.procs import pids_running
from tests.support.script import call_turn
from tests.support.pty import PTY_TIMEOUT


def test_session_leaves_the_users_repository_byte_for_byte(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / "scratch.txt").write_text("untracked\n")
    git(workspace, "add", "src")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "app")
    git(workspace, "stash", "list")
    before = tree_digest(workspace / ".git")
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [
            call_turn("file_edit", path="src/app.py", old_string="hi", new_string="hello"),
            call_turn("file_write", path="docs/new.md", content="# new\n"),
            call_turn("file_delete", path="scratch.txt"),
            call_turn("shell_execute", command=py("open('made.txt','w').write('x')")),
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    created = run.of_type("checkpoint_created")
    assert [c["tool"] for c in created] == ["file_edit", "file_write", "file_delete", "shell_execute"]
    assert created[0]["paths"] == ["src/app.py"] and created[0]["turn"] == 1 and created[0]["call_id"]
    listing = invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home)
    data = json.loads(listing.stdout)
    assert [c["state"] for c in data["checkpoints"]] == ["applied"] * 4 and data["size_bytes"] > 0
    shown = invoke(["checkpoints", "show", created[0]["checkpoint_id"], "--cwd", str(workspace)], home=monkey_home)
    assert "-print('hi')" in shown.stdout and "+print('hello')" in shown.stdout
    undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0 and json.loads(undo.stdout)["removed"] == ["made.txt"]
    restore = invoke(["restore", created[0]["checkpoint_id"], "--cwd", str(workspace)], home=monkey_home)
    assert restore.returncode == 0, restore.stderr
    assert "scratch.txt: brought back" in restore.stdout and "docs/new.md: removed" in restore.stdout
    assert (workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert (workspace / "scratch.txt").read_text() == "untracked\n" and not (workspace / "docs").exists()
    gc = invoke(["checkpoints", "gc", "--keep-days", "0", "--cwd", str(workspace)], home=monkey_home)
    assert gc.returncode == 0 and "removed 6 checkpoint(s)" in gc.stdout
    assert tree_digest(workspace / ".git") == before, "HEAD, index, refs, config, stash: untouched"
    assert git(workspace, "status", "--porcelain") == "?? scratch.txt\n"


def test_hostile_git_config_never_runs(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    evil.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / hook).write_text(evil.read_text())
        (hooks / hook).chmod(0o755)
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil\n")
    with (workspace / ".git" / "config").open("a") as fh:
        fh.write(
            f"[core]\n\tfsmonitor = {evil}\n\thooksPath = {hooks}\n\tpager = {evil}\n"
            f'[filter "evil"]\n\tclean = {evil}\n\tsmudge = {evil}\n\trequired = true\n'
            f'[diff]\n\texternal = {evil}\n[diff "evil"]\n\ttextconv = {evil}\n\tcommand = {evil}\n'
        )
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [
            call_turn("file_write", path="README.md", content="# changed\n"),
            call_turn("shell_execute", command=py("open('x.txt','w').write('x')")),
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    for args in (
        ["checkpoints"],
        ["checkpoints", "show", run.of_type("checkpoint_created")[0]["checkpoint_id"]],
        ["undo", "--steps", "2"],
        ["checkpoints", "gc", "--keep-days", "0"],
    ):
        done = invoke([*args, "--cwd", str(workspace)], home=monkey_home)
        assert done.returncode == 0, done.stderr
    assert not marker.exists(), marker.read_text() if marker.exists() else ""
    assert (workspace / "README.md").read_text() == "# proj\n" and not (workspace / "x.txt").exists()
    git(workspace, "diff", "HEAD")  # the user's own git does run it: the trap is real
    assert marker.exists()


def _wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.subprocess
def test_kill_9_during_a_shell_change_is_repaired(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    marker = f"monkey-kill-9-{os.getpid()}"
    code = "import pathlib, time\npathlib.Path('half.txt').write_text('written before the kill')\ntime.sleep(60)\n"
    slow = workspace / "slow.py"  # in the workspace: the sandboxed command sees no other folder of /tmp
    slow.write_text(code)
    script = write_script(
        tmp_path / "script.json",
        [call_turn("shell_execute", command=f"{sys.executable} slow.py {marker}", timeout=120), {"text": "done"}],
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--task",
            "go",
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=monkey_env(monkey_home),
    )
    try:
        _wait_for(workspace / "half.txt")
        for guard in (monkey_home / "checkpoints").glob("*/owners/*.lock"):
            _wait_for(Path(f"{guard}.guard"))  # the guardian has taken the owner lock's mark in hand
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        for pid in pids_running(marker):  # it dies with monkey; this only makes sure
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    [owner] = list((monkey_home / "checkpoints").glob("*/owners/*.lock"))
    died = death_mark(owner, wait=30)  # the guardian killed the command, then marked that moment
    assert died is not None, "the guardian marked when the command died"
    # the sandbox's mount points for config not there yet (AGENTS.md, .mcp.json, .claude ...) are gone
    assert sorted(p.name for p in workspace.iterdir()) == [".git", "README.md", "half.txt", "slow.py"]
    last_alive = died + BEAT  # the file system clock's margin
    while time.time() <= last_alive + 0.1:  # a condition, not a race: the clock passes it
        time.sleep(0.05)
    (workspace / "after.txt").write_text("the person's, written after monkey was killed\n")
    pending = invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert "repaired checkpoint" in pending.stderr and "change is kept" in pending.stderr
    assert pending.stderr.count("monkey: ") == 1
    [entry] = json.loads(pending.stdout)["checkpoints"]
    assert entry["state"] == "applied" and entry["paths"] == ["after.txt", "half.txt"]
    assert entry["not_attributable"] == ["after.txt"], "changed after monkey's commands died"
    again = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home)
    assert "repaired" not in again.stderr, "repaired once"
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0 and not (workspace / "half.txt").exists()
    assert (workspace / "after.txt").exists(), "never deleted on a guess"


@pytest.mark.subprocess
def test_a_write_just_before_the_kill_is_the_commands_even_when_heartbeats_lag(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """The command writes long after monkey's last heartbeat (a starved heartbeat thread, as
    under load), then monkey is killed: the guardian's mark of when the command died, not the
    stale heartbeat, bounds what was the command's, so undo reverts that write too."""
    marker = f"monkey-late-write-{os.getpid()}"
    code = (
        "import pathlib, time\n"
        "pathlib.Path('early.txt').write_text('at once')\n"
        "time.sleep(3)\n"  # three seconds without a heartbeat: long past the heartbeat's margin
        "pathlib.Path('late.txt').write_text('just before the kill')\n"
        "time.sleep(60)\n"
    )
    (workspace / "slow.py").write_text(code)
    script = write_script(
        tmp_path / "script.json",
        [call_turn("shell_execute", command=f"{sys.executable} slow.py {marker}", timeout=120), {"text": "done"}],
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--task",
            "go",
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=monkey_env(monkey_home, MONKEY_FAULT_NO_HEARTBEAT="1"),
    )
    try:
        _wait_for(workspace / "late.txt")
        for guard in (monkey_home / "checkpoints").glob("*/owners/*.lock"):
            _wait_for(Path(f"{guard}.guard"))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        for pid in pids_running(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    pending = invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert "repaired checkpoint" in pending.stderr, pending.stderr
    [entry] = json.loads(pending.stdout)["checkpoints"]
    assert entry["paths"] == ["early.txt", "late.txt"]
    assert entry["not_attributable"] == [], "written before the command died: the command's"
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "early.txt").exists() and not (workspace / "late.txt").exists()


KILLER = """
import os, signal, sys
from pathlib import Path
from monkey.checkpoints.guard import CheckpointGuard
ws, home, when = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
guard = CheckpointGuard(ws, home=home)
guard.begin(tool="file_write", paths=["README.md"], session_id="s", turn=1, call_id="c")
if when == "after":
    (ws / "README.md").write_text("half-way\\n")
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.subprocess
def test_kill_9_between_pending_and_applied(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    for when in ("before", "after"):
        proc = subprocess.run(
            [sys.executable, "-c", KILLER, str(workspace), str(monkey_home), when],
            env=monkey_env(monkey_home),
            capture_output=True,
            text=True,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        # The next start of monkey in this workspace repairs it (here: a scripted session).
        run = agent(workspace, monkey_home, tmp_path, [])
        assert run.returncode == 0
        lines = [line for line in run.stderr.splitlines() if "repaired checkpoint" in line]
        assert len(lines) == 1 and lines[0].startswith("monkey: ")
        if when == "before":
            assert "nothing was changed" in lines[0]
        else:
            assert "change is kept" in lines[0]
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert (workspace / "README.md").read_text() == "# proj\n"


def test_a_failed_checkpoint_blocks_the_change(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "checkpoints").write_text("not a folder")
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [
            call_turn("file_write", path="new.txt", content="x"),
            call_turn("shell_execute", command=py("open('s.txt','w')")),
        ],
        "--no-approval",
    )
    results = run.of_type("tool_result")
    assert [r["ok"] for r in results] == [False, False]
    assert all("checkpoint failed, so the change was not made" in r["output"] for r in results)
    assert not (workspace / "new.txt").exists() and not (workspace / "s.txt").exists()
    assert not run.of_type("tool_started")


def test_very_large_files_need_a_person(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "config.toml").write_text("[checkpoints]\nmax_file_size = 1000\n")
    (workspace / "data.bin").write_bytes(b"\0" * 5000)
    run = agent(workspace, monkey_home, tmp_path, [call_turn("file_delete", path="data.bin")], "--no-approval")
    [result] = run.of_type("tool_result")
    assert not result["ok"] and "over the checkpoint limit" in result["output"]
    assert (workspace / "data.bin").stat().st_size == 5000


def test_cli_errors_are_clear(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    nothing = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr
    empty = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home)
    assert empty.returncode == 0 and "no checkpoints yet" in empty.stdout
    unknown = invoke(["restore", "zzz", "--cwd", str(workspace)], home=monkey_home)
    assert unknown.returncode == 1 and "no checkpoint 'zzz'" in unknown.stderr
    size = invoke(["checkpoints", "gc", "--max-size", "huge", "--cwd", str(workspace)], home=monkey_home)
    assert size.returncode == 2 and "not a size" in size.stderr
    missing = invoke(["undo", "--cwd", str(tmp_path / "nope")], home=monkey_home)
    assert missing.returncode == 2
    agent(
        workspace,
        monkey_home,
        tmp_path,
        [call_turn("file_write", path="README.md", content="monkey\n")],
        "--no-approval",
    )
    (workspace / "README.md").write_text("user\n")
    refused = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert refused.returncode == 1 and "-monkey" in refused.stderr and "+user" in refused.stderr
    assert (workspace / "README.md").read_text() == "user\n"
    forced = invoke(["undo", "--force", "--cwd", str(workspace)], home=monkey_home)
    assert forced.returncode == 0 and (workspace / "README.md").read_text() == "# proj\n"


CONCURRENT = """
import sys, subprocess
from pathlib import Path
from monkey.checkpoints.guard import CheckpointGuard
ws, home, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
guard = CheckpointGuard(ws, home=home)
for i in range(15):
    e = guard.begin(tool="shell_execute", paths=None, session_id=tag, turn=i, call_id="c")
    (ws / f"{tag}-{i}.txt").write_text(tag)
    assert guard.finish(e, ok=True) == ""
    e = guard.begin(tool="file_write", paths=[f"{tag}-f{i}.txt"], session_id=tag, turn=i, call_id="c")
    (ws / f"{tag}-f{i}.txt").write_text(tag)
    assert guard.finish(e, ok=True) == ""
"""


@pytest.mark.subprocess
def test_two_processes_never_corrupt_the_shadow_index(workspace: Path, monkey_home: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(workspace), str(monkey_home), tag],
            env=monkey_env(monkey_home),
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in "ab"
    ]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read() if p.stderr else ""
    from monkey.checkpoints.api import Checkpoints

    cps = Checkpoints(workspace, home=monkey_home)
    assert cps.guard.shadow.git("fsck", "--no-progress", work_tree=False) is not None
    assert "README.md" in cps.guard.shadow.git("ls-files").decode().split()  # the index reads
    entries = cps.entries()
    for tag in "ab":  # each process's last shell snapshot holds every file it wrote before
        last = [e for e in entries if e.session_id == tag and e.tool == "shell_execute"][-1]
        held = cps.guard.shadow.git("ls-tree", "-r", "--name-only", last.after_tree, work_tree=False).decode().split()
        assert {f"{tag}-{i}.txt" for i in range(15)} | {f"{tag}-f{i}.txt" for i in range(14)} <= set(held)
    assert len(entries) == 60 and all(e.state == "applied" for e in entries)
    cps.undo(steps=60)
    assert sorted(p.name for p in workspace.iterdir()) == [".git", "README.md"]


@pytest.mark.pty
def test_checkpoint_content_is_inert_on_a_terminal_and_exact_in_a_pipe(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import pexpect

    hostile = "title \x1b]0;PWNED\x07 clipboard \x1b]52;c;aGk=\x07 end\n"
    run = agent(
        workspace,
        monkey_home,
        tmp_path,
        [call_turn("file_write", path="evil\x1b[31m.txt", content=hostile)],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    listing = json.loads(invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    ident = listing["checkpoints"][-1]["id"]
    piped = invoke(["checkpoints", "show", ident, "--cwd", str(workspace)], home=monkey_home)
    assert "\x1b]0;PWNED\x07" in piped.stdout  # a file or a pipe gets the diff as it is (git apply works)
    for args in (["checkpoints", "show", ident], ["checkpoints"]):
        child = pexpect.spawn(
            sys.executable,
            ["-m", "monkey", *args, "--cwd", str(workspace)],
            env=monkey_env(monkey_home),
            encoding="utf-8",
            timeout=PTY_TIMEOUT,
        )
        child.expect(pexpect.EOF)
        shown = child.before
        child.close()
        assert child.exitstatus == 0, shown
        assert "\x1b" not in shown and "\x07" not in shown, repr(shown)  # nothing reaches the terminal raw
        assert "evil" in shown
