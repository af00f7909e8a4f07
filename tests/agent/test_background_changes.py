"""What a background process changes is its own checkpoint's change, undone like any command's.

Through the real loop (scripted backend), a real checkpoint guard and real processes: the write
watch tells the process's writes from a foreground command's run in the same turn; without it
(``MONKEY_NO_WRITE_WATCH``) the snapshot at the turn's end records what it wrote.
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
from monkey.checkpoints import watch
from monkey.checkpoints.api import Checkpoints
from monkey.checkpoints.guard import CheckpointGuard
from monkey.events import CheckpointCreated, Event
from monkey.permissions.policy import ApprovalPolicy
from monkey.tools.base import ShellSettings

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc as on Linux"),
]

PY = sys.executable
WRITER = f"{PY} -c \"open('bg.txt', 'w').write('from the background'); import time; time.sleep(300)\""


@pytest.fixture(autouse=True)
def subreaper() -> None:
    children.install(None)


def call(name: str, call_id: str, **arguments: Any) -> ScriptCall:
    return ScriptCall(name=name, arguments=arguments, id=call_id)


def agent_on(workspace: Path, home: Path, turns: list[ScriptTurn], guard: CheckpointGuard | None = None) -> Agent:
    return Agent(
        backend=ScriptedBackend(Script(turns=turns)),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute"]),
        checkpoints=guard or CheckpointGuard(workspace, home=home),
        options=AgentOptions(shell=ShellSettings(kill_grace=0.5)),
    )


async def turn(agent: Agent) -> list[Event]:
    return [e async for e in agent.run("go")]


async def until(check: Any, what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, f"never: {what}"
        await asyncio.sleep(0.02)


@pytest.mark.skipif(bool(watch.missing(Path("/"))), reason="the write watch needs root (fanotify, netlink)")
async def test_its_writes_are_its_own_change_and_undone_like_a_commands(workspace: Path, monkey_home: Path) -> None:
    agent = agent_on(
        workspace,
        monkey_home,
        [
            ScriptTurn(tool_calls=[call("shell_execute", "c1", command=WRITER, background=True)]),
            ScriptTurn(text="started"),
            ScriptTurn(
                tool_calls=[
                    call("shell_execute", "c2", command=f"{PY} -c \"open('fg.txt', 'w').write('fg')\""),
                    call("process_stop", "c3", id="p1"),
                ]
            ),
            ScriptTurn(text="stopped"),
        ],
    )
    first = await turn(agent)
    created = [e for e in first if isinstance(e, CheckpointCreated)]
    assert [(e.call_id, e.turn) for e in created] == [("c1", 1), ("c1", 2)]  # its first change, then the next turn's
    await until(lambda: (workspace / "bg.txt").exists(), "the process wrote")
    second = await turn(agent)
    assert [e.call_id for e in second if isinstance(e, CheckpointCreated)] == ["c2"]  # stopped: none opened after
    points = Checkpoints(workspace, home=monkey_home)
    applied = {e.call_id: e for e in points.entries() if e.state == "applied"}
    assert sorted(applied) == ["c1", "c2"]
    assert applied["c1"].paths == ["bg.txt"] and applied["c2"].paths == ["fg.txt"]  # told apart by the watch
    assert not [r for e in applied.values() for r in e.files if r.unattributed]
    assert not [e for e in points.entries() if e.state == "pending"]
    points.undo()  # the latest: the foreground command's
    assert not (workspace / "fg.txt").exists() and (workspace / "bg.txt").exists()
    outcome = points.undo()  # then the background process's
    assert outcome.removed == ["bg.txt"] and not (workspace / "bg.txt").exists()


async def test_without_the_watch_the_turns_end_records_what_it_wrote(
    workspace: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(watch.DISABLE_ENV, "1")
    agent = agent_on(
        workspace,
        monkey_home,
        [
            ScriptTurn(tool_calls=[call("shell_execute", "c1", command=WRITER, background=True)]),
            ScriptTurn(text="started"),
            ScriptTurn(text="a turn without a command"),
        ],
    )
    await turn(agent)
    await until(lambda: (workspace / "bg.txt").exists(), "the process wrote")
    await turn(agent)  # its end: a snapshot; what changed since the last one is the process's
    points = Checkpoints(workspace, home=monkey_home)
    applied = [e for e in points.entries() if e.state == "applied"]
    assert [(e.call_id, e.paths) for e in applied] == [("c1", ["bg.txt"])]
    assert [e.call_id for e in points.entries() if e.state == "pending"] == ["c1"]  # still running: the next one
    await agent.processes.stop_all()
    assert points.undo().removed == ["bg.txt"] and not (workspace / "bg.txt").exists()


async def test_without_the_watch_a_foreground_command_beside_it_cannot_be_told_apart(
    workspace: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented limit: no write watch, a background process running, a foreground command's change
    is marked not attributable (undo leaves it and says why), never silently given to either."""
    monkeypatch.setenv(watch.DISABLE_ENV, "1")
    sleeper = f'{PY} -c "import time; time.sleep(300)"'
    agent = agent_on(
        workspace,
        monkey_home,
        [
            ScriptTurn(tool_calls=[call("shell_execute", "c1", command=sleeper, background=True)]),
            ScriptTurn(
                tool_calls=[call("shell_execute", "c2", command=f"{PY} -c \"open('fg.txt', 'w').write('fg')\"")]
            ),
            ScriptTurn(text="done"),
        ],
    )
    try:
        await turn(agent)
        points = Checkpoints(workspace, home=monkey_home)
        [fg] = [e for e in points.entries() if e.call_id == "c2"]
        assert fg.paths == ["fg.txt"] and "at the same time" in fg.files[0].unattributed
    finally:
        await agent.processes.stop_all()


class WritesBetweenChanges(CheckpointGuard):
    """A real guard at whose first recorded change of ``c1`` the background process (played by the
    test) writes at once: the moment between one of its changes and the next."""

    wrote = False

    def _complete(self, entry: Any, **kwargs: Any) -> Any:
        after = super()._complete(entry, **kwargs)
        if entry.call_id == "c1" and not self.wrote:
            self.wrote = True
            (self.workspace / "gap.txt").write_text("written between two changes")
        return after


async def test_a_write_between_two_of_its_changes_is_in_the_next(
    workspace: Path, monkey_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a turn's end the next change begins where the last one ended: a write at that moment was
    in neither (the next checkpoint, taken after it, counted it as there before) and undo left it."""
    monkeypatch.setenv(watch.DISABLE_ENV, "1")
    guard = WritesBetweenChanges(workspace, home=monkey_home)
    agent = agent_on(
        workspace,
        monkey_home,
        [
            ScriptTurn(
                tool_calls=[
                    call("shell_execute", "c1", command=f'{PY} -c "import time; time.sleep(300)"', background=True)
                ]
            ),
            ScriptTurn(text="started"),
            ScriptTurn(text="a turn without a command"),
        ],
        guard,
    )
    await turn(agent)
    assert guard.wrote
    await turn(agent)
    points = Checkpoints(workspace, home=monkey_home)
    assert [(e.call_id, e.paths) for e in points.entries() if e.state == "applied"] == [("c1", ["gap.txt"])]
    await agent.processes.stop_all()
    assert points.undo().removed == ["gap.txt"] and not (workspace / "gap.txt").exists()
