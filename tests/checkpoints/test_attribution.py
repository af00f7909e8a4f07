"""Undo touches only what monkey's own call changed: a person's write during a shell command,
several monkey sessions in one workspace. Real monkey processes on real git repositories.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monkey.checkpoints.watch import DISABLE_ENV
from tests.support.checkpoints import finish, py, start_agent, wait_for, waiting_command
from tests.support.script import call_turn
from tests.support.cli import invoke, invoke_async, write_script
from tests.support.watch import HAS_WATCH


def session_of(events: list[dict[str, Any]]) -> str:
    return next(e["session_id"] for e in events if e.get("session_id"))


@pytest.mark.subprocess
@pytest.mark.skipif(not HAS_WATCH, reason="needs fanotify and the process connector (root on Linux)")
def test_a_persons_write_during_a_shell_command_is_never_undone(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("the person's notes\n")
    proc = start_agent(
        workspace,
        monkey_home,
        tmp_path,
        "a",
        [call_turn("shell_execute", command=waiting_command(tmp_path, "a", "made.txt"), timeout=120)],
    )
    wait_for(workspace / "made.txt", proc)
    (workspace / "person.txt").write_text("typed by the person while monkey's command ran\n")
    (workspace / "notes.txt").write_text("the person's notes, edited meanwhile\n")
    (tmp_path / "a.go").write_text("")
    finish(proc)

    listing = json.loads(invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    [cp] = listing["checkpoints"]
    assert sorted(cp["paths"]) == ["made.txt", "notes.txt", "person.txt"]
    assert sorted(cp["not_attributable"]) == ["notes.txt", "person.txt"], cp
    text = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home).stdout
    assert "not attributable: notes.txt, person.txt" in text

    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists(), "the command's own file is undone"
    assert (workspace / "person.txt").read_text() == "typed by the person while monkey's command ran\n"
    assert (workspace / "notes.txt").read_text() == "the person's notes, edited meanwhile\n"
    assert "person.txt: left as it is, not attributable to monkey: written by another program (pid" in undo.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize("watch", [pytest.param(True, id="write-watch"), pytest.param(False, id="time-window")])
def test_concurrent_sessions_undo_only_their_own_changes(
    workspace: Path, monkey_home: Path, tmp_path: Path, watch: bool
) -> None:
    if watch and not HAS_WATCH:
        pytest.skip("needs fanotify and the process connector (root on Linux)")
    env = {} if watch else {DISABLE_ENV: "1"}
    a = start_agent(
        workspace,
        monkey_home,
        tmp_path,
        "a",
        [call_turn("shell_execute", command=waiting_command(tmp_path, "a", "a.txt"), timeout=120)],
        **env,
    )
    wait_for(workspace / "a.txt", a)
    b = start_agent(
        workspace,
        monkey_home,
        tmp_path,
        "b",
        [
            call_turn("file_write", path="b.txt", content="session b\n"),
            call_turn("shell_execute", command=py("open('b2.txt', 'w').write('session b, by a command')")),
        ],
        **env,
    )
    c = start_agent(
        workspace, monkey_home, tmp_path, "c", [call_turn("file_write", path="sub/c.txt", content="session c\n")], **env
    )
    b_events, c_events = finish(b), finish(c)
    (tmp_path / "a.go").write_text("")
    a_events = finish(a)

    undo_a = invoke(["undo", "--session", session_of(a_events), "--cwd", str(workspace)], home=monkey_home)
    assert undo_a.returncode == 0, undo_a.stderr
    for path in ("b.txt", "b2.txt", "sub/c.txt"):
        assert (workspace / path).exists(), f"undoing session a deleted {path}, which another session made"
    if watch:
        assert not (workspace / "a.txt").exists(), "session a's own file is undone"
    else:
        assert (workspace / "a.txt").exists(), "without a write watch, a concurrent shell command taints a's"
        assert "a.txt: left as it is, not attributable to monkey: another monkey ran shell_execute" in undo_a.stdout

    # b's command ran while a's did: with a write watch each knows its own; without, neither claims it.
    b_made = ["b.txt", "b2.txt"] if watch else ["b.txt"]
    for events, made in ((b_events, b_made), (c_events, ["sub/c.txt"])):
        undo = invoke(["undo", "--session", session_of(events), "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
        assert not any((workspace / p).exists() for p in made), undo.stdout
    assert not (workspace / "sub").exists()
    if not watch:
        assert (workspace / "b2.txt").exists() and (workspace / "a.txt").exists()
    assert (workspace / "README.md").read_text() == "# proj\n"


@pytest.mark.subprocess
def test_a_gitignore_change_never_turns_ignored_files_into_created_ones(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / ".gitignore").write_text(".env\nbuild/\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".gitignore").write_text("*.log\n")
    (workspace / ".env").write_text("TOKEN=the person's secret\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "app.bin").write_bytes(b"\x00build output")
    (workspace / "sub" / "old.log").write_text("the person's log\n")
    script = tmp_path / "edit_ignore.py"
    script.write_text(
        "import pathlib as p\n"
        "p.Path('.gitignore').write_text('# nothing ignored any more\\n*.tmp\\n')\n"
        "p.Path('sub/.gitignore').unlink()\n"
        "p.Path('made.txt').write_text('by the command')\n"
        "p.Path('scratch.tmp').write_text('made by the command, ignored by the new rules')\n"
    )
    run = start_agent(
        workspace, monkey_home, tmp_path, "g", [call_turn("shell_execute", command=f"{sys.executable} {script}")]
    )
    finish(run)
    listing = json.loads(invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    [cp] = listing["checkpoints"]
    assert sorted(cp["paths"]) == [".gitignore", "made.txt", "scratch.tmp", "sub/.gitignore"], cp
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert (workspace / ".env").read_text() == "TOKEN=the person's secret\n"
    assert (workspace / "build" / "app.bin").read_bytes() == b"\x00build output"
    assert (workspace / "sub" / "old.log").read_text() == "the person's log\n"
    assert (workspace / ".gitignore").read_text() == ".env\nbuild/\n"
    assert (workspace / "sub" / ".gitignore").read_text() == "*.log\n"
    assert not (workspace / "made.txt").exists() and not (workspace / "scratch.tmp").exists()


def test_what_cannot_be_undone_is_said_when_it_happens(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "config.toml").write_text("[checkpoints]\nmax_file_size = 1000\n")
    (workspace / "big.bin").write_bytes(b"\x00" * 5000)
    (workspace / "grows.log").write_bytes(b"small, under the limit\n")
    lib = workspace / "vendor" / "lib"
    lib.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(lib)], check=True, capture_output=True)
    (lib / "x.txt").write_text("nested\n")
    (workspace / "was_empty").mkdir()
    script = tmp_path / "cmd.py"
    script.write_text(
        "import os, pathlib as p\n"
        "os.remove('big.bin')\n"
        "p.Path('vendor/lib/x.txt').write_text('changed in the nested repository')\n"
        "p.Path('grows.log').write_bytes(b'x' * 4000)\n"
        "os.makedirs('out/a/b')\n"
        "os.makedirs('was_empty/inner')\n"
        "p.Path('made.txt').write_text('undoable')\n"
    )
    command = call_turn("shell_execute", command=f"{sys.executable} {script}")
    for fmt in ("stream-json", "text"):
        script_file = write_script(tmp_path / f"{fmt}.json", [command, {"text": "done"}])
        args = [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script_file),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--output-format",
            fmt,
            "--task",
            "go",
        ]
        run = invoke(args, home=monkey_home)
        assert run.returncode == 0, run.stderr
        if fmt == "stream-json":
            [said] = run.of_type("not_undoable")
            kinds = [e["type"] for e in run.events]
            assert kinds.index("not_undoable") < kinds.index("tool_result")
            items = said["items"]
            assert any(i.startswith("big.bin: deleted; it was over the checkpoint size limit") for i in items), items
            over = "grows.log: changed; its new content is over the checkpoint size limit"
            assert any(i.startswith(over) for i in items), items
            assert any(i.startswith("vendor/lib/: changed inside (vendor/lib/x.txt)") for i in items), items
            assert len(items) == 3, items
            stored = invoke(["sessions", "export", said["session_id"]], home=monkey_home)
            assert "not_undoable" in stored.stdout, "stored as well as shown"
            undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
            assert undo.returncode == 0, undo.stderr
            assert not (workspace / "made.txt").exists() and not (workspace / "out").exists(), undo.stdout
            assert (workspace / "was_empty").is_dir() and not (workspace / "was_empty" / "inner").exists()
            assert "out/: removed" in undo.stdout
            (workspace / "big.bin").write_bytes(b"\x00" * 5000)  # the person puts it back for the second run
            (workspace / "grows.log").write_bytes(b"small, under the limit\n")
        else:
            assert (
                "cannot be undone: big.bin: deleted; it was over the checkpoint size limit (1000 bytes)" in run.stdout
            )
    listing = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home)
    last = listing.stdout.splitlines()[-1]
    assert "[cannot be undone: " in last and "big.bin: deleted" in last and "vendor/lib/: changed" in last, last


@pytest.mark.subprocess
def test_two_shell_commands_at_once_in_one_process_are_not_told_apart(
    workspace: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions of one monkey process (an editor over ACP, `monkey serve`) each run a shell
    command at the same time; without a write watch nothing tells whose write was whose, so
    each command's changes are left alone by undo, with the reason."""
    from monkey.checkpoints.guard import CheckpointGuard

    monkeypatch.setenv(DISABLE_ENV, "1")
    guard = CheckpointGuard(workspace, home=monkey_home)
    first = guard.begin(tool="shell_execute", paths=None, session_id="s1", turn=1, call_id="c1")
    second = guard.begin(tool="shell_execute", paths=None, session_id="s2", turn=1, call_id="c2")
    (workspace / "one.txt").write_text("by the first or the second?\n")
    (workspace / "two.txt").write_text("by the first or the second?\n")
    guard.finish(first, ok=True)
    guard.finish(second, ok=True)
    for cid in (first.id, second.id):
        [entry] = [e for e in guard.journal.entries(guard.key, kind=None, states=None) if e.id == cid]
        assert {r.path for r in entry.files} == {"one.txt", "two.txt"}
        assert all("at the same time" in r.unattributed for r in entry.files), [r.unattributed for r in entry.files]


def waits_for(tmp: Path, mine: str, theirs: str, *, first: bool) -> str:
    """A shell command that writes ``mine`` and waits for ``theirs`` (``first``), or waits for
    ``theirs`` and then writes ``mine``: each sees the other's write happen while it runs."""
    wait = f"while not os.path.exists({theirs!r}): time.sleep(0.01)\n"
    write = f"open({mine!r}, 'w').write('made by the command of ' + {mine!r})\n"
    code = tmp / f"{mine}.py"
    code.write_text("import os, time\n" + (write + wait if first else wait + write))
    return f"{sys.executable} {code}"


@pytest.mark.skipif(not HAS_WATCH, reason="needs fanotify and the process connector (root on Linux)")
async def test_two_commands_at_once_in_one_monkey_each_undo_only_their_own(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """Two sub-agents' shell commands run at the same time in one process: each command's
    checkpoint holds its own files only, so undoing one child's session leaves the other's."""
    from tests.support.agent import collect, of, root_agent, task

    def shell(command: str) -> dict[str, Any]:
        return {"name": "shell_execute", "arguments": {"command": command, "timeout": 60}}

    script = {
        "turns": [
            {"tool_calls": [task("general", description="write a"), task("general", description="write b")]},
            {"text": "both"},
        ],
        "agents": {
            "general#1": {
                "turns": [{"tool_calls": [shell(waits_for(tmp_path, "a.txt", "b.txt", first=True))]}, {"text": "a"}]
            },
            "general#2": {
                "turns": [{"tool_calls": [shell(waits_for(tmp_path, "b.txt", "a.txt", first=False))]}, {"text": "b"}]
            },
        },
    }
    agent = root_agent(workspace, monkey_home, script, checkpoints=True)
    events = await collect(agent.run_task("two at once"))
    results = [e for e in of(events, "tool_result") if e.name == "shell_execute"]
    assert len(results) == 2 and all(r.ok for r in results), results
    assert agent.checkpoints is not None and agent.checkpoints.watching  # type: ignore[attr-defined]
    children = {e.description: e.child_session_id for e in of(events, "subagent_started")}
    made = {e.session_id: sorted(e.paths) for e in of(events, "checkpoint_created")}
    assert set(made) == set(children.values())

    listing = json.loads(
        (await invoke_async(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home)).stdout
    )
    paths = {cp["session_id"]: sorted(cp["paths"]) for cp in listing["checkpoints"]}
    assert paths == {children["write a"]: ["a.txt"], children["write b"]: ["b.txt"]}, listing

    undo = await invoke_async(["undo", "--session", children["write a"], "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "a.txt").exists(), undo.stdout
    assert (workspace / "b.txt").read_text() == "made by the command of b.txt", "the other child's file stays"
    undo = await invoke_async(["undo", "--session", children["write b"], "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "b.txt").exists(), undo.stdout
