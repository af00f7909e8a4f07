"""The ``agent`` and ``agent_reply`` tools: a whole monkey task on the configured backend, for an MCP client.

Each ``agent`` call starts a new monkey session in the workspace (its own agent, stored like
``monkey agent --task``) and runs the prompt as one turn; ``agent_reply`` runs another turn
of a session an ``agent`` call started (kept open while the server runs, else resumed from
the store). The task runs headless: what the mode and rules of ``monkey serve`` (``--mode``,
``[approvals]``) allow runs, anything that would ask a person is refused and the model is
told why, as for ``monkey agent --task`` without a terminal. The client's approval of the
``agent`` call is not an approval of every call the model makes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monkey.events import Event, ToolResult, TurnCompleted
from monkey.mcp_server.log import log

if TYPE_CHECKING:
    from monkey.session.session import Session
    from monkey.session.setup import Setup

__all__ = ["AgentTasks", "TaskResult", "AGENT_TOOLS"]

AGENT_TOOLS = ("agent", "agent_reply")


@dataclass(frozen=True)
class TaskResult:
    ok: bool
    result: str
    session_id: str = ""
    reason: str = ""
    message: str = ""

    def structured(self) -> dict[str, str]:
        return {"result": self.result, "session_id": self.session_id, "reason": self.reason, "message": self.message}


class _Running:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.lock = asyncio.Lock()


class AgentTasks:
    """The sessions ``agent`` started, by id; each runs one turn at a time."""

    def __init__(self, build: Callable[[], Setup]) -> None:
        self.build = build
        """Builds a fresh session's setup (in a thread: it reads config and may create a backend)."""
        self.sessions: dict[str, _Running] = {}
        self.closed = False

    async def _new(self, resume: str | None) -> _Running:
        setup = await asyncio.to_thread(self.build)
        session = setup.session(show=self._show, tell=lambda text, level: log(text))
        try:
            await session.open(resume=resume)
        except BaseException:
            await session.close()
            raise
        running = _Running(session)
        self.sessions[session.agent.session_id] = running
        return running

    @staticmethod
    def _show(event: Event) -> None:
        if isinstance(event, ToolResult):
            log(f"agent task: {event.name} {'ok' if event.ok else 'failed'}")

    async def start(self, prompt: str) -> TaskResult:
        """``agent``: a new session running ``prompt``."""
        from monkey.backends.base import BackendError
        from monkey.session.setup import SetupError
        from monkey.store import StoreError

        if not prompt.strip():
            return TaskResult(False, "the prompt is empty")
        try:
            running = await self._new(None)
        except (StoreError, SetupError, BackendError) as exc:
            return TaskResult(False, f"the task was not started: {getattr(exc, 'message', '') or exc}")
        return await self._turn(running, prompt)

    async def reply(self, session_id: str, prompt: str) -> TaskResult:
        """``agent_reply``: one more turn of ``session_id``."""
        from monkey.backends.base import BackendError
        from monkey.session.setup import SetupError
        from monkey.store import StoreError

        if not prompt.strip():
            return TaskResult(False, "the prompt is empty", session_id)
        running = self.sessions.get(session_id)
        if running is None:
            try:
                running = await self._new(session_id)
            except (StoreError, SetupError, BackendError) as exc:
                return TaskResult(
                    False, f"cannot continue session {session_id}: {getattr(exc, 'message', '') or exc}", session_id
                )
        return await self._turn(running, prompt)

    async def _turn(self, running: _Running, prompt: str) -> TaskResult:
        work = asyncio.ensure_future(self._run(running, prompt))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:  # the client cancelled: the turn ends (and is stored) in the background
            running.session.agent.cancel()
            raise

    async def _run(self, running: _Running, prompt: str) -> TaskResult:
        session = running.session
        async with running.lock:
            if self.closed:
                return TaskResult(
                    False, "monkey serve is shutting down; the task was not run", session.agent.session_id
                )
            last: TurnCompleted | None = None
            # the prompt as a message, never as a person's !command or @path: the client is not the person
            async for event in session.message(prompt):  # stored before anything is answered
                if isinstance(event, TurnCompleted):
                    last = event
            sid = session.agent.session_id
            if last is None:
                return TaskResult(False, "the turn ended without a result", sid, "cancelled")
            ok = last.reason == "completed"
            text = last.result if ok or last.result else (last.message or last.reason)
            return TaskResult(ok, text, sid, last.reason, last.message)

    async def close(self) -> None:
        """Cancel running turns, end every session and close the backends."""
        self.closed = True
        for running in list(self.sessions.values()):
            running.session.agent.cancel()
            async with running.lock:
                try:
                    await running.session.close()
                except Exception as exc:  # noqa: BLE001 - close the others anyway
                    log(f"closing session {running.session.agent.session_id} failed: {exc}")
        self.sessions.clear()
