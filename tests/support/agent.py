"""The agent loop and a session in this process, on the scripted backend."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from monkey.agent.agent_defs import discover_agents
from monkey.agent.budget import Limits
from monkey.agent.loop import Agent, AgentOptions
from monkey.agent.subagents import Delegation, install_task_tool
from monkey.backends.scripted import Script, ScriptedBackend, ScriptTurn
from monkey.checkpoints.guard import CheckpointGuard
from monkey.context.window import ContextManager, ContextSettings
from monkey.events import Event
from monkey.permissions.policy import ApprovalPolicy


async def collect(stream: AsyncIterator[Event]) -> list[Event]:
    """Every event of a stream (a turn of the agent), in order."""
    return [event async for event in stream]


def agent_for(workspace: Path, turns: list[ScriptTurn], **kw: Any) -> Agent:
    """An :class:`Agent` in ``workspace`` on a scripted backend playing ``turns`` (``kw`` go to the Agent)."""
    return Agent(backend=ScriptedBackend(Script(turns=turns)), workspace=workspace, **kw)


def of(events: list[Event], kind: str, session: str | None = None) -> list[Any]:
    """The events of one type (of one session, when given)."""
    return [e for e in events if e.type == kind and (session is None or e.session_id == session)]


class RecordingBackend(ScriptedBackend):
    """The scripted backend (which keeps every request it was sent), with the requests as bytes."""

    @property
    def encoded(self) -> list[bytes]:
        """Every request sent, msgspec-encoded, in order."""
        return [msgspec.json.encode(request) for request in self.requests]


class ListSink(list):
    """A sink that keeps the events."""

    def __call__(self, event: Event) -> None:
        self.append(event)

    def close(self) -> None:
        pass


def make_agent(
    workspace: Path, turns: list[ScriptTurn], *, window: int = 0, compact_at: float = 0.8, session_id: str | None = None
) -> Agent:
    """An agent on a :class:`RecordingBackend` with a context window of ``window`` tokens (0: none)."""
    backend = RecordingBackend(Script(turns=turns, context_window=window))
    context = ContextManager(backend, settings=ContextSettings(compact_at=compact_at))
    return Agent(
        backend=backend,
        workspace=workspace,
        options=AgentOptions(max_iterations=10),
        context=context,
        session_id=session_id,
    )


async def drive(agent: Agent, prompt: str, **kw: Any) -> ListSink:
    """One task through the real ``--task`` driver (a session, store included), in this process."""
    from monkey.line.task import drive_task
    from monkey.session.session import Session

    sink = ListSink()
    session = Session(agent, switcher=None, show=sink, tell=lambda text, level: None)  # type: ignore[arg-type]
    await drive_task(session, prompt, **kw)
    return sink


def db(home: Path) -> sqlite3.Connection:
    """The session store of a monkey home."""
    return sqlite3.connect(home / "monkey.db")


def task(agent: str, prompt: str = "look into it", description: str = "a part", **kw: Any) -> dict[str, Any]:
    """A ``task`` call (a sub-agent) of a script."""
    return {"name": "task", "arguments": {"description": description, "prompt": prompt, "agent": agent, **kw}}


def define(workspace: Path, name: str, front: str, body: str = "Do the part you are given.") -> None:
    """A sub-agent definition ``.monkey/agents/NAME.md`` in the workspace."""
    folder = workspace / ".monkey" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\nname: {name}\n{front}\n---\n{body}\n")


def root_agent(
    workspace: Path,
    home: Path,
    script: dict[str, Any],
    *,
    mode: str = "auto",
    max_depth: int = 2,
    limits: Limits | None = None,
    checkpoints: bool = False,
    **delegation: Any,
) -> Agent:
    """An agent on ``script`` (with its ``agents``) that can delegate with ``task``."""
    backend = ScriptedBackend(msgspec.convert(script, Script))
    policy = ApprovalPolicy(mode=mode)  # type: ignore[arg-type]
    guard = CheckpointGuard(workspace, home=home) if checkpoints else None
    agent = Agent(
        backend=backend,
        workspace=workspace,
        policy=policy,
        checkpoints=guard,
        options=AgentOptions(limits=limits or Limits()),
    )
    defs = discover_agents(workspace, home=home, trusted=True)
    assert not defs.warnings, defs.warnings
    install_task_tool(agent, Delegation(defs, max_depth=max_depth, **delegation))
    return agent
