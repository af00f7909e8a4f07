"""``/processes`` in the session layer (both front ends render its replies): list, one's output,
stop, keep and release, and what bad input gets."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from monkey import children
from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.permissions.policy import ApprovalPolicy
from monkey.session.replies import Note, ProcessView
from monkey.session.session import Session

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups as on Linux"),
]


@pytest.fixture(autouse=True)
def subreaper() -> None:
    children.install(None)


async def test_processes_lists_shows_stops_keeps_and_refuses_bad_input(workspace: Path) -> None:
    start = [
        ScriptCall(name="shell_execute", arguments={"command": c, "background": True}, id=f"c{n}")
        for n, c in enumerate(["printf 'one\\ntwo\\n'", "sleep 300"], 1)
    ]
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=start), ScriptTurn(text="ok")])),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute"]),
    )
    session = Session(agent, switcher=None, show=lambda e: None, tell=lambda t, lvl: None)  # type: ignore[arg-type]
    empty = await session.command("/processes")
    assert isinstance(empty[0], ProcessView) and empty[0].text.startswith("no background processes")
    async for _ in agent.run("start"):
        pass
    await asyncio.wait_for(agent.processes.get("p1").done.wait(), 60)
    try:
        [view] = await session.command("/processes")
        assert isinstance(view, ProcessView) and view.table is agent.processes
        lines = view.text.splitlines()
        assert lines[0].startswith("p1  exited 0  ") and lines[1].startswith("p2  running  ")
        [shown] = await session.command("/processes p1")
        assert isinstance(shown, Note) and shown.text.endswith("printf 'one\\ntwo\\n'\none\ntwo")
        [kept] = await session.command("/processes keep p2")
        assert "keeps running when this session ends" in kept.text and agent.processes.get("p2").kept
        [released] = await session.command("/processes release p2")
        assert "stops with this session again" in released.text and not agent.processes.get("p2").kept
        for bad, said in [
            ("/processes p9", "no background process 'p9'; known: p1, p2"),
            ("/processes stop", "usage: /processes"),
            ("/processes stop p1 p2", "usage: /processes"),
            ("/processes frob p1", "usage: /processes"),
        ]:
            [reply] = await session.command(bad)
            assert isinstance(reply, Note) and reply.level == "warning" and said in reply.text, bad
        [stopped] = await session.command("/processes stop p2")
        assert stopped.text == "stopped p2: sleep 300" and agent.processes.get("p2").state == "stopped"
        end = time.monotonic() + 30
        while children.alive(agent.processes.get("p2").pid):
            assert time.monotonic() < end
            await asyncio.sleep(0.02)
    finally:
        await session.close()
