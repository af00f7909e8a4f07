"""Children die with monkey: real processes, real ``kill -9``, grandchildren that leave the group.

The family of processes comes from ``tests/support/fakes/family.py``: a child with three grandchildren,
one in its group, one in a session of its own, one that also cleared its environment; each
would write a file after 100 s. A test waits (with a generous deadline) until every one of them
is gone, checked by pid *and* start time, so a process that is gone can never write.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey import children, process
from monkey.backends.supervise import AgentProcess, ChildSpec
from monkey.tools.base import ShellSettings, ToolContext, ToolError
from monkey.tools.registry import ToolRegistry
from tests.support.cli import monkey_env, write_script
from tests.support.fakes.family_procs import (
    FAMILY,
    Procs,
    family,
    family_task,
    forked,
    kill_all,
    living,
    wait_gone,
)
from tests.support.procs import pids_running

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's"),
]


def caught(procs: Procs) -> Procs:
    """The family without ``bare``: once monkey itself is killed with SIGKILL, a grandchild that left
    the session *and* cleared its environment while its parent still ran cannot be found (no tag,
    not monkey's orphan, not in a recorded group): the documented limit of what monkey can do
    without a pid namespace. While monkey runs, the subreaper catches it (the tests above)."""
    return {k: v for k, v in procs.items() if k != "bare"}


@pytest.fixture(autouse=True)
def subreaper() -> None:
    """This test process supervises its children as monkey does (no records kept)."""
    children.install(None)


def shell_ctx(ws: Path) -> ToolContext:
    return ToolContext(
        workspace=ws,
        call_id="t1",
        shell=ShellSettings(timeout=10.0, kill_grace=0.5),
        emit_output=lambda stream, text: None,
    )


async def run_shell(ws: Path, command: str, timeout: float) -> str:
    tool = ToolRegistry.default().get("shell_execute")
    return (await tool.run(tool.parse({"command": command, "timeout": timeout}), shell_ctx(ws))).output


async def test_timeout_stops_grandchildren_that_left_the_group(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out after 1 s"):
        await run_shell(tmp_path, f"{sys.executable} {FAMILY} {tmp_path} wait", timeout=1)
    procs = family(tmp_path)
    try:
        assert living(procs) == []  # gone when the call returns: the cap bounds the whole tree
        assert time.monotonic() - started < 50  # timeout + grace + reaping, never the 100 s
    finally:
        kill_all(procs)


async def test_orphans_left_by_a_finished_command_are_stopped(tmp_path: Path) -> None:
    out = await run_shell(tmp_path, f"{sys.executable} {FAMILY} {tmp_path} exit", timeout=30)
    procs = family(tmp_path)
    try:
        assert "family-ready" in out and out.endswith("[exit code 0]")
        assert living(procs) == []
    finally:
        kill_all(procs)
    assert not list(tmp_path.glob("wrote-*"))


async def test_external_agent_grandchild_holding_stdout_cannot_outlast_the_wall_cap(tmp_path: Path) -> None:
    spec = ChildSpec(
        argv=[sys.executable, str(FAMILY), str(tmp_path), "exit"],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        wall_timeout=1.0,
        idle_timeout=60.0,
        grace=0.5,
    )
    agent = AgentProcess(spec)

    async def read_all() -> bytes:
        return b"".join([chunk async for chunk in agent.stdout()])

    try:
        out = await asyncio.wait_for(read_all(), 20)  # before: waited on the grandchildren's 100 s
    finally:
        procs = family(tmp_path)
        kill_all(procs)
    assert b"family-ready" in out
    assert agent.stopped == "wall"
    assert living(procs) == []


def test_a_child_dies_with_its_parent_even_by_kill_9(tmp_path: Path) -> None:
    """A parent process that uses :func:`monkey.process.spawn` and is killed with SIGKILL."""
    code = (
        "import asyncio, sys; from monkey import children, process\n"
        "children.install(None)\n"
        "async def main():\n"
        "    await process.spawn([sys.executable, sys.argv[1], sys.argv[2], 'wait'], env={'PATH': ''})\n"
        "    await asyncio.sleep(100)\n"
        "asyncio.run(main())\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(FAMILY), str(tmp_path)], env=monkey_env(tmp_path / "home")
    )
    procs = family(tmp_path)
    try:
        parent.kill()
        parent.wait()
        assert wait_gone(caught(procs)) == []
    finally:
        kill_all(procs)
    assert not list(tmp_path.glob("wrote-*"))


async def test_a_command_cancelled_while_it_starts_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    """A stop (Ctrl-C, a stop signal) that comes after the fork but before ``spawn`` returned, while
    asyncio still connects the child's pipes: asyncio would SIGKILL the child alone and forget it,
    its grandchildren running on (no group stopped, nothing registered, no guardian). The loop is
    held while the family starts, so the stop always lands in that window."""
    task = asyncio.ensure_future(
        process.spawn(
            [sys.executable, str(FAMILY), str(tmp_path), "wait"],
            env={"PATH": os.environ["PATH"]},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    )
    for _ in range(100):  # one step of the loop at a time, until the child is forked: its pipes are not connected yet
        if forked(tmp_path):
            break
        await asyncio.sleep(0)
    assert forked(tmp_path)
    procs = family(tmp_path)  # the loop is held: the whole family runs before spawn can return
    try:
        assert not task.done()
        task.cancel()
        await asyncio.wait({task}, timeout=30)  # generous; before, it waited for the grandchildren to end
        assert wait_gone(procs, deadline=30) == []  # before: ['group', 'setsid', 'bare']
        assert task.cancelled()  # the cancellation goes on once they are stopped
        assert children.tag_of(procs["child"][0]) is None  # and reaped: forgotten
    finally:
        kill_all(procs)
    assert not list(tmp_path.glob("wrote-*"))


async def test_a_child_still_starting_is_no_stray_of_another_command(tmp_path: Path) -> None:
    """A command that ends looks for its strays while another child is being started (forked, not yet
    registered: a direct child of monkey in a session of its own): that child is not taken for an
    orphan and stopped (a background sub-agent's ``sleep`` killed as its parent's command ended)."""
    env = {"PATH": os.environ["PATH"]}
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    ending = await process.spawn([*sleeper, str(tmp_path / "ending")], env=env)
    task = asyncio.ensure_future(process.spawn([*sleeper, str(tmp_path / "starting")], env=env))
    try:
        for _ in range(100):  # one step of the loop at a time, until the second child is forked
            if forked(tmp_path / "starting"):
                break
            await asyncio.sleep(0)
        [pid] = [p for p in pids_running(str(tmp_path / "starting")) if children.parent_of(p) == os.getpid()]
        assert not task.done()  # not registered yet
        tag = children.tag_of(ending.pid)
        assert tag is not None
        assert [p for p, _ in children.strays(tag, ending.pid)] == []  # before: [pid]
        started = await task
        assert started.pid == pid
    finally:
        await process.stop_group(ending, 0.5)
        if task.done() and not task.cancelled() and task.exception() is None:
            await process.stop_group(task.result(), 0.5)


def test_a_child_that_never_finished_starting_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """The guardian runs before the first child is forked: a parent killed while ``spawn`` still
    waited for the child's pipes (never registered it) leaves no tagged process behind."""
    code = (
        "import asyncio, os, signal, sys; from monkey import children, process\n"
        "from pathlib import Path; from tests.support.fakes.family_procs import family, forked\n"
        "children.install(None)\n"
        "folder = Path(sys.argv[2])\n"
        "async def main():\n"
        "    argv = [sys.executable, sys.argv[1], sys.argv[2], 'wait']\n"
        "    pipe = asyncio.subprocess.PIPE\n"
        "    task = asyncio.ensure_future(process.spawn(argv, env={'PATH': ''}, stdout=pipe, stderr=pipe))\n"
        "    while not forked(folder):\n"
        "        await asyncio.sleep(0)\n"
        "    family(folder)\n"  # the loop held: spawn has not returned
        "    assert not task.done()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "asyncio.run(main())\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(FAMILY), str(tmp_path)], env=monkey_env(tmp_path / "home")
    )
    try:
        assert parent.wait(timeout=60) == -signal.SIGKILL  # not an assertion of its own that failed
        procs = family(tmp_path)
        assert wait_gone(caught(procs)) == []  # before: ['group', 'setsid'] (the child: its parent-death signal)
    finally:
        if parent.poll() is None:
            parent.kill()
        kill_all(family(tmp_path) if (tmp_path / "pids").exists() else {})
    assert not list(tmp_path.glob("wrote-*"))


# --- the real monkey, killed with kill -9 while a scripted shell_execute runs ---------------------------------


def start_monkey(workspace: Path, home: Path, tmp_path: Path, folder: Path) -> subprocess.Popen[str]:
    script = family_task(home, tmp_path, folder)
    return subprocess.Popen(
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
            "--output-format",
            "stream-json",
            "--task",
            "run it",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=monkey_env(home),
    )


def guardian_of(pid: int) -> int | None:
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"monkey.children import guard" in cmdline:
            return int(name)
    return None


def test_kill_9_of_monkey_during_a_shell_command_kills_the_whole_family(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "family"
    folder.mkdir()
    monkey = start_monkey(workspace, monkey_home, tmp_path, folder)
    procs = family(folder)
    try:
        monkey.kill()  # kill -9
        monkey.wait()
        assert wait_gone(caught(procs)) == []  # the child by its parent-death signal, the grandchildren by the guardian
    finally:
        kill_all(procs)
    assert not list(folder.glob("wrote-*"))
    end = time.monotonic() + 20  # the guardian removes the record once it has killed them: wait for it
    while list((monkey_home / "children").glob("*.json")):
        assert time.monotonic() < end, "the guardian never removed its record"
        time.sleep(0.02)


def test_orphans_of_a_killed_run_are_killed_at_the_next_start(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "family"
    folder.mkdir()
    monkey = start_monkey(workspace, monkey_home, tmp_path, folder)
    procs = family(folder)
    try:
        end = time.monotonic() + 20
        while (guard := guardian_of(monkey.pid)) is None:
            assert time.monotonic() < end, "no guardian"
            time.sleep(0.02)
        os.kill(guard, signal.SIGKILL)  # everything of monkey killed at once, guardian first
        monkey.kill()
        monkey.wait()
        assert wait_gone({"child": procs["child"]}) == []  # its parent-death signal
        survivors = {k: v for k, v in procs.items() if k != "child"}
        assert living(survivors) == ["group", "setsid", "bare"]  # nobody left to kill them...
        records = list((monkey_home / "children").glob("*.json"))
        assert len(records) == 1 and json.loads(records[0].read_text())["children"][0][0] == procs["child"][0]
        script = write_script(tmp_path / "quiet.json", [{"text": "hello"}])
        subprocess.run(
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
                "--task",
                "hi",
            ],
            env=monkey_env(monkey_home),
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
        # ...until the next monkey starts: the tagged ones (the bare one cleared its tag, and its
        # group leader was the dead child, so no record names it: it is the one that escapes)
        assert wait_gone({k: v for k, v in survivors.items() if k != "bare"}) == []
    finally:
        kill_all(procs)
    assert not list((monkey_home / "children").glob("*.json"))


def test_a_recycled_pid_in_a_record_is_never_signalled(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)  # leads its own group, untagged
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        start = children.start_time(bystander.pid)
        assert start is not None
        folder = tmp_path / "children"
        folder.mkdir()
        (folder / "x.json").write_text(
            json.dumps({"pid": dead.pid, "start": 1, "owner": "nobody-1", "children": [[bystander.pid, start + 1]]})
        )
        assert children.clean_dead_owners(folder) == 0
        assert bystander.poll() is None  # another process than the recorded one: left alone
        assert not (folder / "x.json").exists()
        (folder / "y.json").write_text(
            json.dumps({"pid": dead.pid, "start": 1, "owner": "nobody-1", "children": [[bystander.pid, start]]})
        )
        children.clean_dead_owners(folder)
        assert bystander.wait(timeout=10) == -signal.SIGKILL  # the recorded one: killed with its group
    finally:
        if bystander.poll() is None:
            bystander.kill()
            bystander.wait()


def test_a_dead_monkeys_placeholders_are_removed_only_while_empty(tmp_path: Path) -> None:
    """Its guardian killed too: the next monkey (its checkpoint repair) removes the sandbox's mount
    points the dead one recorded, each only while it is still empty; the record stays for the orphans."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").touch()
    (ws / ".claude").mkdir()
    (ws / "CLAUDE.md").write_text("the person's, written into the placeholder from outside\n")
    (ws / ".agents").mkdir()
    (ws / ".agents" / "x").touch()
    (ws / "target").touch()
    (ws / ".mcp.json").symlink_to(ws / "target")
    folder = tmp_path / "children"
    folder.mkdir()
    held = [
        [str(ws / "AGENTS.md"), "file"],
        [str(ws / ".claude"), "dir"],
        [str(ws / "CLAUDE.md"), "file"],
        [str(ws / ".agents"), "dir"],
        [str(ws / ".mcp.json"), "file"],
        [str(ws / "gone"), "dir"],
        [str(ws / "target"), "dir"],
    ]
    (folder / "x.json").write_text(
        json.dumps({"pid": dead.pid, "start": 1, "owner": "nobody-1", "children": [], "placeholders": held})
    )
    children.remove_dead_placeholders(folder)
    assert sorted(p.name for p in ws.iterdir()) == [".agents", ".mcp.json", "CLAUDE.md", "target"]
    assert json.loads((folder / "x.json").read_text())["placeholders"] == []
