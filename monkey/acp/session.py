"""One editor thread: the session layer's :class:`~monkey.session.session.Session`, rendered as updates.

The :class:`Session`'s pump stores every event before it shows it; showing here means turning
the event into ``session/update`` payloads (:class:`~monkey.acp.updates.Translator`), which are
sent as soon as the event is stored (before the loop goes on, so a question about a dangerous
call reaches the editor after what led to it, and after it is on disk). Slash commands typed as
a prompt run through :meth:`Session.command` and their replies come back as agent message text.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import update_agent_message_text

from monkey.acp.updates import Translator, history_updates, stop_reason
from monkey.events import Event, ToolImage, TurnCompleted

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from monkey.session.setup import Setup

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

    def __init__(self, setup: Setup, client: Any) -> None:
        self.core = setup.session(show=self._show, tell=self._tell)
        self.agent = self.core.agent
        self.client = client
        self.translator = Translator(self.agent.workspace)
        self.pending: list[Any] = []
        """Updates of events already stored, waiting to be sent."""
        self.cancel_asked = False
        """The editor cancelled before the turn's task existed: cancel it as soon as it does."""
        self.closed = False
        self.alerts = list(setup.alerts)
        """What the editor's person must read before the first prompt (shown as the agent's message)."""

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

    async def prompt(self, typed: str, prompt: str, images: Sequence[ToolImage] = ()) -> str:
        """Run ``typed`` (a command, ``!command`` or a message, sent as ``prompt`` with ``images``); the stop reason."""
        from monkey.agent.person_shell import shell_line

        if typed.startswith("/"):
            return await self.command(typed)
        command = shell_line(typed)
        last = await self._run(self.core.shell(command) if command is not None else self.core.message(prompt, images))
        if last is not None and last.reason == "denied" and last.message:
            await self.say(f"\n\nmonkey: {last.message}\n")
        return "cancelled" if last is None else stop_reason(last, self.translator.last_message)

    async def _run(self, events: AsyncIterator[Event]) -> TurnCompleted | None:
        """Send the updates of each event the session's pump stored and showed; the last turn's end."""
        self.cancel_asked = False
        self.translator.last_message = None
        last: TurnCompleted | None = None
        async for event in events:
            if self.cancel_asked:
                self.cancel_asked = False
                self.agent.cancel()
            if isinstance(event, TurnCompleted):
                last = event
            await self.drain()
        await self.drain()
        return last

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
        last = await self._run(self.core.workflow_turn(name, task))
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

        lines = await self.core.stored(HISTORY_TYPES)
        updates = history_updates(self.agent.workspace, history_items(lines))
        for update in updates:
            await self.send(update)
        return len(updates)

    async def close(self) -> None:
        """End the session (``session_ended`` if it started), close its store, MCP servers and backend."""
        if self.closed:
            return
        self.closed = True
        try:
            await self.core.close()
        finally:
            self.pending.clear()
