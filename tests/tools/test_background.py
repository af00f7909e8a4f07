"""Background processes through the real loop (scripted backend), with real processes.

``shell_execute`` with ``background`` starts a command and returns at once; ``process_output``,
``process_stop`` and ``process_list`` read, stop and list it. A test waits for a process's output
or end by the condition itself (with a generous deadline a passing test never waits out), never
by a sleep.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from monkey import children
from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import ApprovalRequested, Event, ToolResult
from monkey.permissions.policy import ApprovalPolicy
from monkey.tools.base import ShellSettings
from monkey.tools.processes import BackgroundProcess, OutputLog
from tests.support.fakes.family_procs import FAMILY, family, kill_all, living, wait_gone

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc as on Linux"),
]

PY = sys.executable
SLEEPER = f"{PY} -c \"print('ready', flush=True); import time; time.sleep(300)\""


@pytest.fixture(autouse=True)
def subreaper() -> None:
    """This test process supervises its children as monkey does (no records kept)."""
    children.install(None)


def bg(command: str, call_id: str) -> ScriptTurn:
    return ScriptTurn(
        tool_calls=[ScriptCall(name="shell_execute", arguments={"command": command, "background": True}, id=call_id)]
    )


def tool(name: str, call_id: str, **arguments: Any) -> ScriptTurn:
    return ScriptTurn(tool_calls=[ScriptCall(name=name, arguments=arguments, id=call_id)])


def make(workspace: Path, turns: list[ScriptTurn], **policy: Any) -> Agent:
    policy.setdefault("allow", ["shell_execute"])
    return Agent(
        backend=ScriptedBackend(Script(turns=turns)),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(**policy),
        options=AgentOptions(shell=ShellSettings(kill_grace=0.5)),
    )


async def turn(agent: Agent, prompt: str = "go") -> list[Event]:
    return [e async for e in agent.run(prompt)]


def results(events: list[Event]) -> dict[str, ToolResult]:
    return {e.call_id: e for e in events if isinstance(e, ToolResult)}


async def until(check: Any, what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, f"never: {what}"
        await asyncio.sleep(0.02)


def printed(entry: BackgroundProcess) -> str:
    return entry.output.read(0, 10**9)[0]


async def test_start_read_and_stop_a_background_command(workspace: Path) -> None:
    agent = make(
        workspace,
        [
            bg(SLEEPER, "c1"),
            ScriptTurn(text="started"),
            tool("process_output", "c2", id="p1"),
            tool("process_list", "c3"),
            tool("process_stop", "c4", id="p1"),
            tool("process_list", "c5"),
            tool("process_output", "c6", id="p1", since=3),
            tool("process_output", "c7", id="p9"),
            tool("process_output", "c8", id="p1", since=-1),
            tool("process_stop", "c9", id="p1"),
            ScriptTurn(text="stopped"),
        ],
    )
    first = results(await turn(agent))
    assert first["c1"].ok and "started in the background as process p1" in first["c1"].output
    entry = agent.processes.get("p1")
    assert entry.state == "running" and children.alive(entry.pid)
    await until(lambda: "ready" in printed(entry), "the output came")
    second = results(await turn(agent))
    assert second["c2"].ok and second["c2"].output == "ready\n[p1 running; next=6]"
    assert second["c3"].output.startswith("p1  running  ") and second["c3"].output.endswith(SLEEPER)
    assert second["c4"].ok and "stopped p1 (running before" in second["c4"].output
    assert not children.alive(entry.pid) and entry.state == "stopped"
    assert second["c5"].output.startswith("p1  stopped  ")
    assert second["c6"].output == "dy\n[p1 stopped; next=6]"  # since: only what came after
    assert not second["c7"].ok and second["c7"].output == "no background process 'p9'; known: p1"
    assert not second["c8"].ok and "invalid arguments for process_output" in second["c8"].output
    assert second["c9"].ok and "stopped p1 (stopped before" in second["c9"].output  # twice: nothing more to do


async def test_a_background_command_is_decided_like_a_foreground_one(workspace: Path) -> None:
    """Headless with no rule: refused, nothing started; a deny rule: refused the same way."""
    marker = workspace / "ran"
    command = f"{PY} -c \"open('ran', 'w')\""
    agent = make(workspace, [bg(command, "c1"), ScriptTurn(text="no")], allow=[])
    got = results(await turn(agent))
    assert not got["c1"].ok and got["c1"].denied_by == "rule" and agent.processes.all() == []
    denied = make(
        workspace,
        [bg(command, "c1"), ScriptTurn(text="no")],
        allow=["shell_execute"],
        deny=[f"shell_execute({PY} -c *)"],
    )
    got = results(await turn(denied))
    assert not got["c1"].ok and "denied" in got["c1"].output and denied.processes.all() == []
    foreground = make(
        workspace,
        [
            ScriptTurn(tool_calls=[ScriptCall(name="shell_execute", arguments={"command": command}, id="c1")]),
            ScriptTurn(text="no"),
        ],
        allow=["shell_execute"],
        deny=[f"shell_execute({PY} -c *)"],
    )
    same = results(await turn(foreground))
    assert same["c1"].output == got["c1"].output  # the same verdict, said the same way
    assert not marker.exists()


async def test_shell_syntax_in_the_background_needs_a_person_like_in_the_foreground(workspace: Path) -> None:
    agent = make(workspace, [bg("echo hi > out.txt", "c1"), ScriptTurn(text="no")], allow=["shell_execute"])
    events = await turn(agent)
    assert [e.name for e in events if isinstance(e, ApprovalRequested)] == ["shell_execute"]  # a person's line
    assert not results(events)["c1"].ok and results(events)["c1"].denied_by == "rule"  # nobody there: refused
    assert agent.processes.all() == [] and not (workspace / "out.txt").exists()


async def test_a_flood_of_output_keeps_memory_bounded(workspace: Path) -> None:
    flood = f"{PY} -c \"import sys; [sys.stdout.write('x' * 1023 + chr(10)) for _ in range(4000)]; print('end')\""
    agent = make(
        workspace,
        [bg(flood, "c1"), ScriptTurn(text="started"), tool("process_output", "c2", id="p1"), ScriptTurn(text="read")],
    )
    await turn(agent)
    entry = agent.processes.get("p1")
    await asyncio.wait_for(entry.done.wait(), 120)
    assert entry.status() == "exited 0"
    # ended, nothing of it left: its pid is no longer monkey's to signal (the system may give it to another)
    assert entry.gone and children.tag_of(entry.pid) is None
    assert entry.output.end == 4000 * 1024 + 4  # every character counted...
    assert entry.output.size == agent.options.shell.background_keep  # ...the latest ones kept, no more
    out = results(await turn(agent))["c2"].output
    assert out.startswith(f"[{entry.output.start} earlier characters are no longer kept]\n")
    assert len(out) < agent.options.shell.output_limit + 200  # one read gives back a bounded piece
    assert f"more characters: read again with since={entry.output.start + agent.options.shell.output_limit}" in out


def test_the_output_log_keeps_the_latest_characters_numbered_from_the_start() -> None:
    log = OutputLog(10)
    log.add("abcdef\n")
    log.add("ghijkl\n")
    assert (log.start, log.end, log.size) == (4, 14, 10)
    assert log.read(0, 100) == ("ef\nghijkl\n", 14, 4)
    assert log.read(12, 100) == ("l\n", 14, 0)
    assert log.read(14, 100) == ("", 14, 0)
    assert log.read(99, 100) == ("", 14, 0)
    log.add("x" * 25)  # one piece longer than what is kept, no newline: held, then kept
    log.flush()
    assert log.size == 10 and log.end == 39 and log.read(0, 3) == ("xxx", 32, 29)


def test_secrets_are_redacted_across_reads() -> None:
    secret = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    log = OutputLog(1000, frozenset({"hunter2-secret-value"}))
    log.add(f"key={secret[:10]}")
    log.add(f"{secret[10:]} and hunter2-secret-value\n")
    assert log.read(0, 1000)[0] == "key=[redacted] and [redacted]\n"


async def test_a_child_never_sees_monkeys_secrets_and_its_output_is_scrubbed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2
    monkeypatch.setenv("GITHUB_TOKEN", token)
    (workspace / "leak.txt").write_text(f"token {token}\n")
    show = f"{PY} -c \"import os; print(os.environ.get('GITHUB_TOKEN', 'unset')); print(open('leak.txt').read())\""
    agent = make(
        workspace,
        [bg(show, "c1"), ScriptTurn(text="started"), tool("process_output", "c2", id="p1"), ScriptTurn(text="read")],
    )
    await turn(agent)
    await asyncio.wait_for(agent.processes.get("p1").done.wait(), 60)
    out = results(await turn(agent))["c2"].output
    assert out.startswith("unset\ntoken [redacted]\n") and token not in out


async def test_one_that_forks_and_exits_is_still_stopped_whole(workspace: Path, tmp_path: Path) -> None:
    """The command exits at once, leaving grandchildren (one in its group, one in a session of its own)."""
    folder = tmp_path / "family"
    folder.mkdir()
    agent = make(
        workspace,
        [
            bg(f"{PY} {FAMILY} {folder} exit", "c1"),
            ScriptTurn(text="started"),
            tool("process_list", "c2"),
            tool("process_stop", "c3", id="p1"),
            ScriptTurn(text="stopped"),
        ],
    )
    await turn(agent)
    procs = family(folder)
    try:
        entry = agent.processes.get("p1")
        await until(lambda: entry.state == "exited", "the command exited")
        assert living(procs) == ["group", "setsid", "bare"]  # what it left runs on
        got = results(await turn(agent))
        assert "p1  exited 0" in got["c2"].output and got["c3"].ok
        assert living(procs) == []  # its group and the ones that left it: gone with process_stop
    finally:
        kill_all(procs)


@pytest.mark.parametrize("mode", ["wait", "exit"])  # exit: the command forks and exits, its processes run on
async def test_the_end_of_the_session_stops_them_but_the_kept_ones(workspace: Path, tmp_path: Path, mode: str) -> None:
    from monkey.session.session import Session

    folder = tmp_path / "family"
    folder.mkdir()
    agent = make(workspace, [bg(f"{PY} {FAMILY} {folder} {mode}", "c1"), bg(SLEEPER, "c2"), ScriptTurn(text="both")])
    await turn(agent)
    procs = family(folder)
    try:
        if mode == "exit":
            await until(lambda: agent.processes.get("p1").state == "exited", "the command exited")
            assert living(procs) == ["group", "setsid", "bare"]
        kept = agent.processes.keep_aside("p2")
        session = Session(agent, switcher=None, show=lambda e: None, tell=lambda t, lvl: None)  # type: ignore[arg-type]
        await session.end()
        assert living(procs) == []  # the family, grandchildren included
        assert kept.state == "running" and children.alive(kept.pid)  # the person keeps this one
        assert [p.id for p in agent.processes.all()] == ["p2"]
        await session.close()  # nothing outlives the session's close
        assert not children.alive(kept.pid) and kept.state == "stopped"
    finally:
        kill_all(procs)
    assert wait_gone(procs) == []


async def test_the_limit_of_processes_at_once(workspace: Path) -> None:
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[bg(SLEEPER, "c1"), bg(SLEEPER, "c2"), ScriptTurn(text="x")])),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute"]),
        options=AgentOptions(shell=ShellSettings(kill_grace=0.5, background_limit=1)),
    )
    try:
        got = results(await turn(agent))
        assert got["c1"].ok and not got["c2"].ok
        assert "1 background processes already run (the limit is 1)" in got["c2"].output
    finally:
        await agent.processes.stop_all()


def test_kill_9_of_monkey_leaves_no_orphan_of_a_background_command(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """monkey (a real process) starts the family in the background, then waits in a foreground command;
    ``kill -9`` of monkey takes the background command and its grandchildren with it."""
    import subprocess

    from tests.support.cli import monkey_env, write_script

    folder = tmp_path / "family"
    folder.mkdir()
    monkey_home.mkdir(parents=True, exist_ok=True)
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "off"\n[approvals]\nallow = ["shell_execute"]\n')
    script = write_script(
        tmp_path / "script.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "shell_execute",
                        "arguments": {"command": f"{PY} {FAMILY} {folder} wait", "background": True},
                    }
                ]
            },
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "sleep 300", "timeout": 300}}]},
            {"text": "done"},
        ],
    )
    monkey = subprocess.Popen(
        [
            PY,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "run it",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=monkey_env(monkey_home),
    )
    procs = family(folder)
    try:
        monkey.kill()  # kill -9
        monkey.wait()
        # the command by its parent-death signal, what it started by the guardian (the one that left the
        # session and cleared its environment is the documented limit, as for a foreground command)
        assert wait_gone({k: v for k, v in procs.items() if k != "bare"}) == []
    finally:
        kill_all(procs)
    assert not list(folder.glob("wrote-*"))


@pytest.mark.parametrize("kind", ["bubblewrap", "landlock"])
async def test_a_background_command_runs_in_the_sandbox_like_a_foreground_one(
    kind: str, workspace: Path, tmp_path: Path
) -> None:
    from monkey.tools.sandbox import bubblewrap_problem, landlock_problem, probe

    problem = bubblewrap_problem() if kind == "bubblewrap" else landlock_problem()
    if problem:
        pytest.skip(problem)
    outside = tmp_path / "outside.txt"
    script = tmp_path / "writes.py"  # outside the workspace: readable in the sandbox, not writable
    (workspace / "build").mkdir()  # Landlock lets no new entry into the workspace's root itself
    script.write_text(
        f"open('build/inside.txt', 'w').write('x')\ntry:\n    open({str(outside)!r}, 'w')\n"
        "except OSError as e:\n    print('refused', e.errno)\n"
    )
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[bg(f"{PY} {script}", "c1"), ScriptTurn(text="x")])),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute"]),
        options=AgentOptions(shell=ShellSettings(kill_grace=0.5, sandbox=probe(kind).sandbox)),
    )
    assert results(await turn(agent))["c1"].ok
    entry = agent.processes.get("p1")
    await asyncio.wait_for(entry.done.wait(), 60)
    assert entry.status() == "exited 0", printed(entry)
    assert "refused" in printed(entry) and not outside.exists()  # outside the workspace: read-only
    assert (workspace / "build" / "inside.txt").read_text() == "x"
    await agent.processes.stop_all()


async def test_a_long_session_keeps_a_bounded_table(workspace: Path) -> None:
    """Many short commands, one a turn: the oldest ended ones are forgotten, never the running one."""
    turns = [bg(SLEEPER, "c0"), ScriptTurn(text="started")]
    for n in range(1, 13):
        turns += [bg("true", f"c{n}"), ScriptTurn(text="ran")]
    agent = Agent(
        backend=ScriptedBackend(Script(turns=turns)),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute"]),
        options=AgentOptions(shell=ShellSettings(kill_grace=0.5, background_limit=2)),
    )
    try:
        for n in range(13):
            assert results(await turn(agent))[f"c{n}"].ok
            if n:  # each short one has ended before the next starts
                await asyncio.wait_for(agent.processes.get(f"p{n + 1}").done.wait(), 60)
        ids = [p.id for p in agent.processes.all()]
        assert ids == ["p1"] + [f"p{n}" for n in range(7, 14)]  # 4 × the limit: the sleeper and the latest
        assert agent.processes.get("p1").state == "running"
    finally:
        await agent.processes.stop_all()


async def test_a_foreground_command_ending_leaves_a_background_ones_processes_alone(
    workspace: Path, tmp_path: Path
) -> None:
    """A background command that forks and exits leaves processes re-parented to monkey (its subreaper);
    a foreground command ending meanwhile stops its own strays, not those: they carry the background
    command's tag or sit in its group. (One that left the session and cleared its environment cannot be
    told from the foreground command's own: the documented limit.)"""
    folder = tmp_path / "family"
    folder.mkdir()
    agent = make(
        workspace,
        [
            bg(f"{PY} {FAMILY} {folder} exit", "c1"),
            ScriptTurn(text="started"),
            ScriptTurn(tool_calls=[ScriptCall(name="shell_execute", arguments={"command": "true"}, id="c2")]),
            ScriptTurn(text="ran"),
            tool("process_stop", "c3", id="p1"),
            ScriptTurn(text="stopped"),
        ],
    )
    await turn(agent)
    procs = family(folder)
    try:
        entry = agent.processes.get("p1")
        await until(lambda: entry.state == "exited", "the command exited")
        assert results(await turn(agent))["c2"].ok
        assert {"group", "setsid"} <= set(living(procs))  # not the foreground command's strays
        assert results(await turn(agent))["c3"].ok
        assert living(procs) == []
    finally:
        kill_all(procs)


async def test_a_sub_agents_background_command_is_the_sessions(workspace: Path, monkey_home: Path) -> None:
    """A sub-agent (the ``task`` tool) starts one; its parent lists and stops it, after the child ended."""
    from tests.support.agent import define, root_agent, task

    define(workspace, "starter", "description: starts a server")
    script = {
        "turns": [
            {"tool_calls": [task("starter", "start the server")]},
            {"tool_calls": [{"name": "process_list", "arguments": {}, "id": "l1"}]},
            {"tool_calls": [{"name": "process_stop", "arguments": {"id": "p1"}, "id": "s1"}]},
            {"text": "done"},
        ],
        "agents": {
            "starter": {
                "turns": [
                    {"tool_calls": [{"name": "shell_execute", "arguments": {"command": SLEEPER, "background": True}}]},
                    {"text": "started p1"},
                ]
            }
        },
    }
    agent = root_agent(workspace, monkey_home, script)
    events = await turn(agent)
    got = results(events)
    assert got["l1"].output.startswith("p1  running  ") and got["s1"].ok
    assert agent.processes.get("p1").state == "stopped"


async def test_a_daemon_that_closed_its_output_is_still_stopped(workspace: Path, tmp_path: Path) -> None:
    """The classic daemon: the command starts a child in a session of its own with no output and exits;
    nothing holds the pipes, the group is empty, yet the daemon is still the process's (its tag)."""
    pidfile = tmp_path / "daemon.pid"
    script = tmp_path / "daemonize.py"
    script.write_text(
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True,\n"
        "                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
    )
    agent = make(
        workspace,
        [
            bg(f"{PY} {script}", "c1"),
            ScriptTurn(text="started"),
            tool("process_stop", "c2", id="p1"),
            ScriptTurn(text="stopped"),
        ],
    )
    await turn(agent)
    entry = agent.processes.get("p1")
    await asyncio.wait_for(entry.done.wait(), 60)
    daemon = int(pidfile.read_text())
    start = children.start_time(daemon)
    try:
        assert children.alive(daemon, start) and not entry.gone
        assert results(await turn(agent))["c2"].ok
        await until(lambda: not children.alive(daemon, start), "the daemon stopped")
    finally:
        if children.alive(daemon, start):
            import os
            import signal

            os.kill(daemon, signal.SIGKILL)
