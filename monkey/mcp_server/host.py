"""The monkey side of ``monkey serve``: one agent and one stored session for the server's life.

Each ``tools/call`` runs through :meth:`monkey.agent.loop.Agent.run_tool` (the loop's own
call path) one at a time, and every event it makes is stored before the result goes back
to the client (durable before visible). The stored session is opened at the first call, so a
client that only lists the tools leaves no empty session behind; ``monkey sessions list``
shows it and ``monkey undo`` reverts its changes like any other session's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monkey.events import Event, ToolResult
from monkey.mcp_server.log import log

if TYPE_CHECKING:
    from monkey.mcp_server.tasks import AgentTasks
    from monkey.session.replies import Level
    from monkey.session.setup import Questions, SessionRequest, Setup

__all__ = ["CallResult", "ToolHost", "build_host", "log"]


@dataclass(frozen=True)
class CallResult:
    ok: bool
    output: str
    session_id: str = ""


class ToolHost:
    """Runs the client's tool calls as turns of one monkey session."""

    def __init__(self, setup: Setup, tasks: AgentTasks | None = None) -> None:
        self.session = setup.session(show=self._show, tell=self._tell)
        self.agent = self.session.agent
        self.tasks = tasks
        """Whole monkey tasks (the ``agent`` and ``agent_reply`` tools; None: not offered)."""
        self._lock = asyncio.Lock()
        self.closed = False

    @property
    def session_id(self) -> str | None:
        """The stored session's id once the first call opened it, else None."""
        return self.agent.session_id if self.session.handle is not None else None

    def _show(self, event: Event) -> None:
        if isinstance(event, ToolResult):
            log(
                f"{event.name} {'ok' if event.ok else 'failed'} ({event.duration_ms:.0f} ms)"
                + ("" if event.ok else f": {event.output.splitlines()[0][:200] if event.output else ''}")
            )

    def _tell(self, text: str, level: Level) -> None:
        log(text)

    async def call(self, name: str, arguments: dict[str, Any], *, via: str) -> CallResult:
        """Run one call; what the client is given back (after every event of it is stored).

        When the client cancels the request (or the server stops), the call's turn is cancelled
        (its children killed) and still ends and is stored in the background.
        """
        run = asyncio.ensure_future(self._call(name, arguments, via))
        try:
            return await asyncio.shield(run)
        except asyncio.CancelledError:
            self.agent.cancel()
            raise

    async def _call(self, name: str, arguments: dict[str, Any], via: str) -> CallResult:
        from monkey.store import StoreError

        async with self._lock:  # one turn at a time, in the order the calls came
            if self.closed:
                return CallResult(False, "monkey serve is shutting down; the call was not run")
            if self.session.handle is None:
                try:
                    await self.session.open()
                except StoreError as exc:  # nothing runs that could not be recorded
                    return CallResult(False, f"the call was not run: the session cannot be stored: {exc}")
            result: ToolResult | None = None
            ended = ""
            async for event in self.session.tool_call(name, arguments, via=via):  # stored, then answered
                if isinstance(event, ToolResult):
                    result = event
                elif event.type == "turn_completed":
                    ended = getattr(event, "message", "")
            if result is None:
                return CallResult(False, ended or "the call was not run", self.agent.session_id)
            return CallResult(result.ok, result.output, self.agent.session_id)

    async def close(self) -> None:
        """Stop a running call (its children are killed), end and close the stored session."""
        if self.closed:
            return
        self.closed = True
        self.agent.cancel()
        if self.tasks is not None:
            await self.tasks.close()
        async with self._lock:
            await self.session.close()


def build_host(request: SessionRequest, questions: Questions) -> ToolHost:
    """The host of ``monkey serve``: a session built from ``request`` whose calls the client's approver
    answers, and whole tasks (``agent``, ``agent_reply``) in sessions of their own, run headless.

    Raises:
        SetupError: a bad request, config or workspace.
        BackendError: the backend cannot be created.
    """
    from monkey.mcp_server.approver import ClientApprover
    from monkey.mcp_server.tasks import AgentTasks
    from monkey.permissions.requests import HeadlessApprover
    from monkey.session.setup import build_agent

    setup = build_agent(request, ClientApprover(), questions)
    for notice in setup.notices:
        log(notice)
    return ToolHost(setup, AgentTasks(lambda: build_agent(request, HeadlessApprover(), questions)))
