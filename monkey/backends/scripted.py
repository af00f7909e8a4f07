"""A deterministic backend that replays a script: for tests, demos and benchmarks.

The script is a JSON object::

    {"model": "optional name",
     "turns": [
        {"text": "I'll create it.", "tool_calls": [{"name": "file_write",
                                                     "arguments": {"path": "a.txt", "content": "hi"}}]},
        {"text": "Done."}
     ]}

Each model call streams the next turn: ``thinking`` (optional) and ``text`` as several
deltas, then one ``message_completed`` with the tool calls, then ``usage``. A turn may also
set ``delay`` (seconds to wait before each delta, to let tests cancel mid-stream),
``error`` (fail this call with that message, kind ``error_kind``), ``repeat`` (play this
turn N times) and ``usage`` (``{"input_tokens": .., "output_tokens": .., "cost_usd": ..}``, and
``cache_read_tokens``, ``cache_creation_tokens``). When the
script runs out, the call fails with a clear error.

Sub-agents (the ``task`` tool) get their own scripts from ``agents``, by agent name, or by
``NAME#N`` for the Nth child of that agent (so two children of one agent running in parallel
each have theirs)::

    {"turns": [...], "agents": {"explore": {"turns": [{"text": "found it"}]},
                                "general#2": {"turns": [...]}}}
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from monkey.backends.base import BackendError, Capabilities, ModelCheck
from monkey.events import Event, MessageCompleted, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.messages import ModelRequest

__all__ = ["ScriptedBackend", "ScriptTurn", "Script", "load_script"]


class ScriptCall(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One tool call in a script."""

    name: str
    arguments: dict[str, Any] = {}
    id: str = ""


class ScriptTurn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the scripted model says in one model call."""

    text: str = ""
    thinking: str = ""
    tool_calls: list[ScriptCall] = []
    delay: float = 0.0
    error: str = ""
    error_kind: str = "server_error"
    repeat: int = 1
    stop_reason: str = ""
    """How the message ends (default ``tool_use`` with calls, else ``end_turn``): ``max_tokens`` ..."""
    usage: dict[str, float] = {}
    """``input_tokens``, ``output_tokens`` (default: a count of the text), ``cost_usd``, ``cache_read_tokens``
    and ``cache_creation_tokens`` (default 0)."""


class Script(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A whole script."""

    turns: list[ScriptTurn]
    model: str = "scripted"
    context_window: int = 0
    """The window the scripted model claims, in tokens (0: unknown, no automatic compaction)."""
    agents: dict[str, Script] = {}
    """Scripts of sub-agents: by ``NAME#N`` (the Nth child of agent NAME in the run) or by ``NAME``
    (every child of that agent, one cursor shared by all of them)."""


def load_script(path: str | Path) -> Script:
    """Read and validate a script file; errors name the file and the problem."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BackendError(f"cannot read script {path}: {exc.strerror or exc}", kind="invalid_request") from None
    try:
        return msgspec.json.decode(data, type=Script)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise BackendError(f"bad script {path}: {exc}", kind="invalid_request") from None


_PIECES = re.compile(r"\S+\s*|\s+")


def _chunks(text: str, size: int = 3) -> list[str]:
    """Split text into a few deltas of about ``size`` words, as a model would stream them."""
    words = _PIECES.findall(text)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)] or ([text] if text else [])


class ScriptedBackend:
    """Replays a :class:`Script`, one turn per model call."""

    capabilities = Capabilities(counts_tokens=True)
    """A model: streams a message; the loop runs the tools and keeps the context."""
    name = "scripted"

    def __init__(
        self,
        script: Script,
        *,
        agents: dict[str, Script] | None = None,
        shared: dict[str, ScriptedBackend] | None = None,
    ) -> None:
        self.script = script
        self._agents = {**(agents or {}), **script.agents}
        self._shared: dict[str, ScriptedBackend] = shared if shared is not None else {}
        """The backends of agents scripted by name, shared by every child of that agent in the run."""
        self.model = script.model
        self.context_window = script.context_window
        self._turns: list[ScriptTurn] = [t for t in script.turns for _ in range(max(1, t.repeat))]
        self._next = 0
        self._calls = 0
        self.requests: list[ModelRequest] = []
        """Every request received, in order (what a test checks the model was sent)."""

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedBackend:
        """A backend for the script at ``path``."""
        return cls(load_script(path))

    def fork(self, agent: str, number: int) -> ScriptedBackend:
        """The backend of the ``number``-th sub-agent ``agent``: its script in ``agents``."""
        script = self._agents.get(f"{agent}#{number}")
        if script is not None:
            return ScriptedBackend(script, agents=self._agents, shared=self._shared)
        if agent in self._agents:
            if agent not in self._shared:
                self._shared[agent] = ScriptedBackend(self._agents[agent], agents=self._agents, shared=self._shared)
            return self._shared[agent]
        raise BackendError(
            f'the script has no turns for sub-agent {agent} (add "agents": {{"{agent}": {{"turns": [...]}}}} to it)',
            kind="invalid_request",
        )

    @property
    def calls(self) -> int:
        """How many model calls were made."""
        return self._calls

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the next turn of the script."""
        self._calls += 1
        self.requests.append(request)
        if self._next >= len(self._turns):
            raise BackendError(f"the script has no more turns ({len(self._turns)} played)", kind="invalid_request")
        turn = self._turns[self._next]
        self._next += 1
        sid = request.session_id
        if turn.error:
            if turn.delay:
                await asyncio.sleep(turn.delay)
            raise BackendError(turn.error, kind=turn.error_kind)
        for piece in _chunks(turn.thinking):
            if turn.delay:
                await asyncio.sleep(turn.delay)
            yield ThinkingDelta(session_id=sid, text=piece)
        for piece in _chunks(turn.text):
            if turn.delay:
                await asyncio.sleep(turn.delay)
            yield TextDelta(session_id=sid, text=piece)
        calls = [
            ToolCallSpec(id=c.id or f"call_{self._next}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(turn.tool_calls)
        ]
        yield MessageCompleted(
            session_id=sid,
            text=turn.text,
            thinking=turn.thinking,
            tool_calls=calls,
            stop_reason=turn.stop_reason or ("tool_use" if calls else "end_turn"),
        )
        prompt_chars = len(request.system) + sum(len(m.content) for m in request.messages)
        yield Usage(
            session_id=sid,
            model=self.model,
            input_tokens=int(turn.usage.get("input_tokens", prompt_chars // 4)),
            output_tokens=int(turn.usage.get("output_tokens", max(1, len(turn.text) // 4) if turn.text else 0)),
            cost_usd=float(turn.usage.get("cost_usd", 0.0)),
            cache_read_tokens=int(turn.usage.get("cache_read_tokens", 0)),
            cache_creation_tokens=int(turn.usage.get("cache_creation_tokens", 0)),
        )

    def count_tokens(self, text: str) -> int:
        """A deterministic count: one token per four bytes of UTF-8, rounded up."""
        return (len(text.encode("utf-8")) + 3) // 4

    async def check_model(self) -> ModelCheck:
        """Any name will do: the model's name is only a label on what the script replays."""
        return ModelCheck(None, "the scripted backend replays its script whatever the model is called")

    async def aclose(self) -> None:
        """Nothing to release."""
