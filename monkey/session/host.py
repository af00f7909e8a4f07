"""The host a slash command works on: the running conversation, as commands need it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.events import Event
    from monkey.session.switch import BackendSwitcher
    from monkey.store import Recorder, SessionStore

__all__ = ["Host", "BUSY"]

BUSY = "a turn is running; cancel it first"
"""What a command that needs the conversation still says while a turn runs."""


class Host(Protocol):
    """The running conversation, as the commands need it."""

    agent: Agent
    switcher: BackendSwitcher

    @property
    def working(self) -> bool:
        """Whether a turn runs."""
        ...

    @property
    def store(self) -> SessionStore | None:
        """The open session store (None: sessions are not saved)."""
        ...

    @property
    def recorder(self) -> Recorder | None:
        """The open session's recorder."""
        ...

    async def emit(self, event: Event) -> None:
        """Store ``event`` (starting the session first), then show it."""
        ...
