"""One editor thread: the session layer's :class:`~monkey.session.session.Session`, rendered as updates.

The :class:`Session` stores every event before it shows it; showing here means turning the
event into ``session/update`` payloads (:class:`~monkey.acp.updates.Translator`), which are
sent as soon as the event is stored. Slash commands typed as a prompt run through
:meth:`Session.command` and their replies come back as agent message text. A question
about a dangerous call is written to disk before the editor asks it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import update_agent_message_text

from monkey.acp.updates import Translator, history_updates, stop_reason
from monkey.events import Event, TurnCompleted
from monkey.session.session import Session

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher

__all__ = ["AcpSession", "log", "workspace_of"]


def log(text: str) -> None:
    """A line for whoever reads monkey's stderr (stdout is the protocol)."""
    sys.stderr.write(f"monkey acp: {text}\n")
    sys.stderr.flush()


def workspace_of(cwd: str) -> Path:
    """The workspace a ``cwd`` names; ValueError when it is not an absolute directory."""
    path = Path(cwd)
    if not path.is_absolute():
        raise ValueError(f"cwd must be an absolute path, got {cwd!r}")
    if not path.is_dir():
        raise ValueError(f"cwd {cwd} is not a directory")
    return path.resolve()


class AcpSession:
    """One conversation the editor drives (its ACP session id is monkey's session id)."""

    def __init__(self, agent: Agent, switcher: BackendSwitcher, client: Any) -> None:
        self.agent = agent
        self.client = client
        self.translator = Translator(agent.workspace)
        self.pending: list[Any] = []
        """Updates of events already stored, waiting to be sent."""
        self.core = Session(agent, switcher, show=self._show, tell=self._tell)
        self.cancel_asked = False
        """The editor cancelled before the turn's task existed: cancel it as soon as it does."""
        self.closed = False

    @property
    def id(self) -> str:
        """The session id (ACP's and monkey's)."""
        return self.agent.session_id

    @property
    def working(self) -> bool:
        return self.core.working

    # -- rendering -----------------------------------------------------------------------

    def _show(self, event: Event) -> None:
        self.pending.extend(self.translator.updates(event))

    def _tell(self, text: str, level: str) -> None:
        log(text)
        self.pending.append(update_agent_message_text(f"\n\nmonkey: {text}\n"))

    async def send(self, update: Any) -> None:
        """One ``session/update`` to the editor."""
        await self.client.session_update(session_id=self.id, update=update)

    async def drain(self) -> None:
        """Send what the stored events show as."""
        while self.pending:
            await self.send(self.pending.pop(0))

    async def say(self, text: str) -> None:
        """Text for the person, as an agent message chunk."""
        if text:
            self.pending.append(update_agent_message_text(text))
        await self.drain()

    # -- prompts ---------------------------------------------------------------------------

    async def prompt(self, typed: str, prompt: str) -> str:
        """Run ``typed`` (a command, ``!command`` or a message, sent as ``prompt``); the stop reason."""
        from monkey.agent.person_shell import shell_line

        if typed.startswith("/"):
            return await self.command(typed)
        self.cancel_asked = False
        command = shell_line(typed)
        events = self.agent.run_shell(command) if command is not None else self.agent.run(prompt)
        self.translator.last_message = None
        last: TurnCompleted | None = None
        async for event in events:
            if self.cancel_asked:
                self.cancel_asked = False
                self.agent.cancel()
            if isinstance(event, TurnCompleted):
                last = event
            await self.core.emit(event)  # stored, then shown (into self.pending)
            if event.type == "approval_requested":
                await self._write_now()
            await self.drain()
        if last is None:
            return "cancelled"
        if last.reason == "denied" and last.message:
            await self.say(f"\n\nmonkey: {last.message}\n")
        return stop_reason(last, self.translator.last_message)

    async def _write_now(self) -> None:
        """Put what is buffered on disk (a question the person will act on)."""
        from monkey.store import StoreError

        recorder = self.core.recorder
        if recorder is None or recorder.failed is not None:
            return
        try:
            await recorder.flush()
        except StoreError as exc:
            self._tell(f"{exc}; this session is no longer saved", "error")
            self.agent.cancel()

    async def command(self, text: str) -> str:
        """Run one slash command and send its replies as text; always ``end_turn``."""
        from monkey.acp.replies import render
        from monkey.store import StoreError

        from acp.helpers import update_current_mode

        from monkey.session.replies import ModeChanged, SendPrompt, StartWorkflow

        try:
            replies = await self.core.command(text)
        except StoreError as exc:
            replies = []
            texts = [f"error: {exc}"]
        else:
            texts = [render(reply) for reply in replies]
        for reply in replies:
            if isinstance(reply, ModeChanged):  # the editor's mode picker follows /mode
                await self.send(update_current_mode(reply.mode))
        await self.drain()
        await self.say("\n\n".join(t for t in texts if t))
        flows = [reply for reply in replies if isinstance(reply, StartWorkflow)]
        if flows:  # /workflow: its stages run now, in this prompt
            await self.say("\n\n")
            return await self.workflow(flows[0].name, flows[0].task)
        sent = [reply for reply in replies if isinstance(reply, SendPrompt)]
        if sent:  # /init: the turn it asks for runs now, in this prompt
            await self.say("\n\n")
            return await self.prompt(sent[0].prompt, sent[0].prompt)
        return "end_turn"

    async def workflow(self, name: str, task: str) -> str:
        """Run workflow ``name`` on ``task`` (its stages as turns, each event stored, then shown); the stop reason."""
        self.cancel_asked = False
        self.translator.last_message = None
        last: TurnCompleted | None = None
        async for event in self.core.workflow_turn(name, task):
            if self.cancel_asked:
                self.cancel_asked = False
                self.agent.cancel()
            if isinstance(event, TurnCompleted):
                last = event
            if event.type == "approval_requested":
                await self._write_now()
            await self.drain()
        await self.drain()
        return "cancelled" if last is None else stop_reason(last, self.translator.last_message)

    def cancel(self) -> None:
        """``session/cancel``: stop the running turn (or the one about to start)."""
        if not self.agent.cancel():
            self.cancel_asked = True

    # -- opening, loading and closing -----------------------------------------------------------

    async def open(self, resume: str | None = None) -> None:
        """Open a new stored session, or the stored session ``resume`` (StoreError when it cannot)."""
        await self.core.open(resume=resume)

    async def replay(self) -> int:
        """Send the stored conversation as updates (``session/load``); how many were sent."""
        from monkey.store.history import HISTORY_TYPES, history_items

        handle = self.core.handle
        if handle is None:
            return 0
        if handle.recorder.failed is None and handle.recorder.pending:
            await handle.recorder.flush()
        lines = await handle.store.event_lines(self.id, HISTORY_TYPES)
        updates = history_updates(self.agent.workspace, history_items(lines))
        for update in updates:
            await self.send(update)
        return len(updates)

    async def close(self) -> None:
        """End the session (``session_ended`` if it started), close its store and backend."""
        if self.closed:
            return
        self.closed = True
        try:
            self.agent.cancel()
            await self.core.end()
        finally:
            self.pending.clear()
            if self.agent.mcp is not None:
                await self.agent.mcp.aclose()
            await self.agent.backend.aclose()
