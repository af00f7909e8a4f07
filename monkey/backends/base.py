"""The small protocol every model backend implements.

A backend turns one :class:`~monkey.messages.ModelRequest` into a stream of events:
``text_delta`` / ``thinking_delta`` while the model writes, exactly one
``message_completed`` carrying the whole message and its tool calls, and usually a
``usage`` event. Failures are raised as :class:`BackendError`.

What the agent loop relies on beyond that is declared, never probed: every backend has
:attr:`Backend.capabilities` (:class:`Capabilities`). A backend that runs its own tools (Claude
Code, Codex) is an :class:`ExternalAgent`: its ``stream`` takes the gate its own tool calls pass
that turn. One whose model call may leave a run open (an agent plugin) is :class:`TurnBound`:
the loop calls :meth:`TurnBound.end_turn` when the turn ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

from monkey.events import Event
from monkey.messages import ModelRequest

if TYPE_CHECKING:
    from monkey.backends.gate import ToolGate

__all__ = [
    "API",
    "Backend",
    "BackendError",
    "Capabilities",
    "CountsTokens",
    "ExternalAgent",
    "ModelCheck",
    "TurnBound",
    "as_external",
    "as_token_counter",
    "as_turn_bound",
]


@dataclass(frozen=True)
class Capabilities:
    """What a backend does beyond streaming one model call, declared by the backend."""

    runs_own_tools: bool = False
    """It runs its own tools (Claude Code, Codex): the loop runs none, checkpoints the whole tree
    around each call, and hands :meth:`ExternalAgent.stream` the gate its calls pass."""
    keeps_own_context: bool = False
    """It is handed the whole conversation as is (no compaction or elision by monkey's context window):
    an agent that keeps its own context, or one that runs its own tools."""
    ends_turns: bool = False
    """A model call may leave a run open across calls (an agent plugin waiting for a tool result):
    the loop calls :meth:`TurnBound.end_turn` when the turn ends."""
    counts_tokens: bool = False
    """It has its model's own tokenizer (:meth:`CountsTokens.count_tokens`; the local model, the
    scripted one); otherwise the context window counts with the BPE encoding of the model's name."""
    images: bool = False
    """It takes images (a person's ``@shot.png``, an image ``file_read`` or an MCP tool gave back):
    the APIs, Claude Code; the others are told in a line what they did not get."""


API = Capabilities(images=True)
"""A model behind an API: streams a message; the loop does everything else."""
TEXT_ONLY = Capabilities()
"""A model behind an API that reads only text (``[openai] images = false``)."""


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

    @property
    def name(self) -> str:
        """Short backend name (``scripted``, ``local``, ``anthropic`` ...)."""
        ...

    @property
    def model(self) -> str:
        """The model this backend talks to, as a person would name it."""
        ...

    capabilities: Capabilities
    """What it does beyond streaming (see :class:`Capabilities`)."""

    @property
    def context_window(self) -> int:
        """Tokens of the model's context window when the backend knows it (the local model's ``n_ctx``);
        0: not known, taken from the model's name (:func:`monkey.context.tokens.window_for`)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the events of one model call for ``request``."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds (connections, child processes)."""
        ...

    async def check_model(self) -> ModelCheck:
        """Whether it has the model it was built with (``/model NAME`` asks before switching)."""
        ...


class ExternalAgent(Backend, Protocol):
    """A backend that runs its own tools (``capabilities.runs_own_tools``): Claude Code, Codex."""

    def stream(self, request: ModelRequest, gate: ToolGate | None = None) -> AsyncIterator[Event]:
        """Stream one run; ``gate`` decides the agent's own tool calls this turn (None: refuse them)."""
        ...


class CountsTokens(Backend, Protocol):
    """A backend with its model's own tokenizer (``capabilities.counts_tokens``)."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model."""
        ...


class TurnBound(Backend, Protocol):
    """A backend whose run may stay open between model calls (``capabilities.ends_turns``): an agent plugin."""

    async def end_turn(self) -> None:
        """The turn ended: close a run still open (a denial or Esc left it waiting)."""
        ...


def as_external(backend: Backend) -> ExternalAgent | None:
    """``backend`` as an :class:`ExternalAgent` when it declares it runs its own tools, else None."""
    return cast("ExternalAgent", backend) if backend.capabilities.runs_own_tools else None


def as_token_counter(backend: Backend) -> CountsTokens | None:
    """``backend`` as a :class:`CountsTokens` when it declares its own tokenizer, else None."""
    return cast("CountsTokens", backend) if backend.capabilities.counts_tokens else None


def as_turn_bound(backend: Backend) -> TurnBound | None:
    """``backend`` as a :class:`TurnBound` when it declares it ends turns, else None."""
    return cast("TurnBound", backend) if backend.capabilities.ends_turns else None


@dataclass(frozen=True)
class ModelCheck:
    """Whether a backend has the model it was built with (``/model NAME`` asks before switching).

    Every backend has ``async def check_model(self) -> ModelCheck``: the local backend knows its
    file, a server lists its models, one that cannot tell says so. ``exists`` is None when
    the backend could not tell (the server was unreachable, the CLI decides at its next run).
    """

    exists: bool | None
    note: str = ""
    """Why not, or why it could not be checked, in words for a person."""
