"""One editor thread: a monkey conversation, its session store, and the updates it sends.

:class:`AcpSession` is the session layer's :class:`~monkey.session.commands.Host` for the
editor: slash commands typed as a prompt run through :func:`monkey.session.commands.run_command`
and their replies come back as agent message text. A prompt runs one turn of the agent loop
(``!command`` runs the person's shell command, as in the terminal); each event is stored
first and only then sent as a ``session/update`` (durable before visible).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import update_agent_message_text

from monkey.acp.updates import Translator, history_updates, stop_reason
from monkey.events import Event, TurnCompleted

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.agent.switch import BackendSwitcher
    from monkey.commands.resume import SessionHandle
    from monkey.store import Recorder, SessionStore

__all__ = ["AcpSession", "log"]


def log(text: str) -> None:
    """A line for whoever reads monkey's stderr (stdout is the protocol)."""
    sys.stderr.write(f"monkey acp: {text}\n")
    sys.stderr.flush()


class AcpSession:
    """One conversation the editor drives (its ACP session id is monkey's session id)."""

    def __init__(self, agent: Agent, switcher: BackendSwitcher, handle: SessionHandle, client: Any) -> None:
        self.agent = agent
        self.switcher = switcher
        self.handle = handle
        self.client = client
        self.translator = Translator(agent.workspace)
        self.cancel_asked = False
        """The editor cancelled before the turn's task existed: cancel it as soon as it does."""
        self.closed = False

    # -- the Host the commands work on ---------------------------------------------------

    @property
    def id(self) -> str:
        """The session id (ACP's and monkey's)."""
        return self.agent.session_id

    @property
    def working(self) -> bool:
        """Whether a turn runs."""
        return self.agent.running

    @property
    def store(self) -> SessionStore | None:
        return self.handle.store

    @property
    def recorder(self) -> Recorder | None:
        return self.handle.recorder

    async def emit(self, event: Event) -> None:
        """Store ``event`` (starting the session first), then send what it shows as."""
        await self._start()
        await self._record(event)
        for update in self.translator.updates(event):
            await self.send(update)

    # -- sending and storing ---------------------------------------------------------------

    async def send(self, update: Any) -> None:
        """One ``session/update`` to the editor."""
        await self.client.session_update(session_id=self.id, update=update)

    async def say(self, text: str) -> None:
        """Text for the person, as an agent message chunk."""
        if text:
            await self.send(update_agent_message_text(text))

    async def _start(self) -> None:
        if not self.agent.started:
            await self._record(self.agent.session_started())

    async def _record(self, event: Event) -> None:
        """Hand ``event`` to the store; a write that fails stops the turn (what was saved is kept)."""
        from monkey.store import StoreError

        recorder = self.handle.recorder
        if recorder.failed is not None:
            return
        recorder.add(event)
        # a question the person answers in the editor is on disk before the editor asks it
        wait = recorder.durable(event) or event.type == "approval_requested"
        if wait or recorder.should_flush(event):
            try:
                await recorder.flush(wait=wait)
            except StoreError as exc:
                log(f"{exc}; this session is no longer saved")
                self.agent.cancel()
                await self.say(f"\n\nmonkey: {exc}; this session is no longer saved, the turn stops\n")

    # -- prompts ---------------------------------------------------------------------------

    async def prompt(self, typed: str, prompt: str) -> str:
        """Run ``typed`` (a command, ``!command`` or a message, sent as ``prompt``); the stop reason."""
        from monkey.agent.person_shell import shell_line

        if typed.startswith("/"):
            return await self.command(typed)
        self.cancel_asked = False
        await self._start()
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
            await self._record(event)  # durable before visible
            for update in self.translator.updates(event):
                await self.send(update)
        if last is None:
            return "cancelled"
        if last.reason == "denied" and last.message:
            await self.say(f"\n\nmonkey: {last.message}\n")
        return stop_reason(last, self.translator.last_message)

    async def command(self, text: str) -> str:
        """Run one slash command and send its replies as text; always ``end_turn``."""
        from monkey.acp.replies import render
        from monkey.session.commands import run_command
        from monkey.store import StoreError

        try:
            texts = [render(reply) for reply in await run_command(self, text)]  # type: ignore[arg-type]
        except StoreError as exc:
            texts = [f"error: {exc}"]
        await self.say("\n\n".join(t for t in texts if t))
        return "end_turn"

    def cancel(self) -> None:
        """``session/cancel``: stop the running turn (or the one about to start)."""
        if not self.agent.cancel():
            self.cancel_asked = True

    # -- loading and closing -----------------------------------------------------------------

    async def replay(self) -> int:
        """Send the stored conversation as updates (``session/load``); how many were sent."""
        from monkey.store.history import HISTORY_TYPES, history_items

        recorder = self.handle.recorder
        if recorder.failed is None and recorder.pending:
            await recorder.flush()
        lines = await self.handle.store.event_lines(self.id, HISTORY_TYPES)
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
            if self.agent.running:
                self.agent.cancel()
            if self.agent.started:
                self.handle.recorder.add(self.agent.session_ended("completed"))
                self.agent.started = False
            await self.handle.close()
        finally:
            await self.agent.backend.aclose()

    @staticmethod
    def workspace_of(cwd: str) -> Path:
        """The workspace a ``cwd`` names; ValueError when it is not an absolute directory."""
        path = Path(cwd)
        if not path.is_absolute():
            raise ValueError(f"cwd must be an absolute path, got {cwd!r}")
        if not path.is_dir():
            raise ValueError(f"cwd {cwd} is not a directory")
        return path.resolve()
