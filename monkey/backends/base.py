"""The small protocol every model backend implements.

A backend turns one :class:`~monkey.messages.ModelRequest` into a stream of events:
``text_delta`` / ``thinking_delta`` while the model writes, exactly one
``message_completed`` carrying the whole message and its tool calls, and usually a
``usage`` event. Failures are raised as :class:`BackendError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from monkey.events import Event
from monkey.messages import ModelRequest

__all__ = ["Backend", "BackendError", "ModelCheck"]


class BackendError(Exception):
    """A model call failed; ``kind`` names the failure and ``message`` says what to do."""

    def __init__(
        self, message: str, *, kind: str = "backend", retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (``retry-after``), if it said."""


@runtime_checkable
class Backend(Protocol):
    """A model: streams the events of one model call."""

    name: str
    """Short backend name (``scripted``, ``local``, ``anthropic`` ...)."""
    model: str
    """The model this backend talks to, as a person would name it."""

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the events of one model call for ``request``."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds (connections, child processes)."""
        ...


@dataclass(frozen=True)
class ModelCheck:
    """Whether a backend has the model it was built with (``/model NAME`` asks before switching).

    Backends that can tell have an ``async def check_model(self) -> ModelCheck`` method:
    the local backend knows its file, a server lists its models. ``exists`` is None when
    the backend could not tell (the server was unreachable, the CLI decides at its next run).
    """

    exists: bool | None
    note: str = ""
    """Why not, or why it could not be checked, in words for a person."""
