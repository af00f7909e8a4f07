"""Helpers of the session-store tests: a backend that keeps the requests it was sent, and
running a task through the real ``--task`` driver in-process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from monkey.context.window import ContextManager, ContextSettings
from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.scripted import Script, ScriptedBackend, ScriptTurn
from monkey.events import Event


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


def make_agent(workspace: Path, turns: list[ScriptTurn], *, window: int = 0, compact_at: float = 0.8,
               session_id: str | None = None) -> Agent:
    backend = RecordingBackend(Script(turns=turns, context_window=window))
    context = ContextManager(backend, settings=ContextSettings(compact_at=compact_at))
    return Agent(backend=backend, workspace=workspace, options=AgentOptions(max_iterations=10),
                 context=context, session_id=session_id)


async def drive(agent: Agent, prompt: str, **kw) -> ListSink:
    """One task through the real ``--task`` driver (a session, store included), in this process."""
    from monkey.line.task import drive_task
    from monkey.session.session import Session

    sink = ListSink()
    session = Session(agent, switcher=None, show=sink, tell=lambda text, level: None)  # type: ignore[arg-type]
    await drive_task(session, prompt, **kw)
    return sink


def db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "monkey.db")
