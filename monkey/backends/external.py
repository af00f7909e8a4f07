"""What the Claude Code and Codex backends share: one supervised run per model call.

An external agent runs its own tools. Its backend streams the agent's text and thinking,
its tool calls and results (as :class:`~monkey.events.ToolCallEvent` /
:class:`~monkey.events.ToolResult`, for display: monkey's loop does not run them again)
and its usage, and ends with one ``message_completed`` without tool calls, so the turn
ends. The agent's own session id is kept and the next call resumes it. The loop wraps
every run in a whole-tree checkpoint (``runs_own_tools``), so ``monkey undo`` reverts it.

An agent that asks before its tools run (``interactive``: Claude Code's permission prompts
on stdio) keeps its stdin open: after each piece of output the backend answers what it
asked with the decision of the :class:`~monkey.backends.gate.ToolGate` the loop passes to
:meth:`ExternalAgentBackend.stream` for the run, and tells the gate when an allowed call's
result came (:meth:`~monkey.backends.gate.ToolGate.done`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import msgspec

from monkey.backends.base import BackendError, Capabilities, ModelCheck
from monkey.backends.gate import ToolGate
from monkey.backends.jsonl import DEFAULT_MAX_LINE, JsonlParser
from monkey.backends.supervise import AgentProcess, ChildSpec, check_version, child_env
from monkey.events import AgentSession, Event, ToolImage, ToolResult
from monkey.messages import ModelRequest

__all__ = ["ExternalAgentBackend", "StreamParser", "last_prompt", "agent_session_from_events"]


class StreamParser(Protocol):
    error: str
    unknown: int

    def feed(self, data: bytes) -> list[Event]: ...

    def close(self) -> list[Event]: ...


def last_prompt(request: ModelRequest) -> str:
    """The user's latest message: what the external agent is asked to do now.

    Consecutive user messages at the end (a command the person ran with ``!``, then their
    message) go together, in order: the agent keeps its own context and sees only this.
    """
    tail: list[str] = []
    for message in reversed(request.messages):
        if message.role == "user":
            tail.append(message.content)
        elif tail:
            break
    if not tail:
        raise BackendError("there is no user message to send to the agent", kind="invalid_request")
    return "\n\n".join(reversed(tail))


def last_images(request: ModelRequest) -> list[ToolImage]:
    """The images attached to the user's latest messages (those :func:`last_prompt` sends), in order."""
    tail: list[list[ToolImage]] = []
    for message in reversed(request.messages):
        if message.role == "user":
            tail.append(list(message.images))
        elif tail:
            break
    return [image for images in reversed(tail) for image in images]


def agent_session_from_events(lines: list[bytes], agent: str) -> str:
    """The latest session id ``agent`` reported in a stored session's events, or ``""``."""
    from monkey.events import DecodeError, decode

    for line in reversed(lines):
        if b"agent_session" not in line:
            continue
        try:
            event = decode(line)
        except DecodeError:
            continue
        if isinstance(event, AgentSession) and event.agent == agent and event.agent_session_id:
            return event.agent_session_id
    return ""


class ExternalAgentBackend(ABC):
    """Runs an agent CLI once per model call; subclasses say how to call it and parse it."""

    name = "external"
    label = "the agent"
    version_range: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 0, 0), (999, 0, 0))
    capabilities = Capabilities(runs_own_tools=True, keeps_own_context=True)
    context_window = 0
    """Tells the loop to checkpoint the whole tree around each call, not to run tools itself, and to
    pass the gate its calls go through to :meth:`stream` (see :class:`~monkey.backends.base.ExternalAgent`)."""
    interactive = False
    """The agent asks before its tools run: stdin stays open and :meth:`converse` answers."""

    def __init__(
        self,
        *,
        executable: str,
        model: str | None,
        workspace: Path,
        env: Mapping[str, str] | None = None,
        base_env: Mapping[str, str] | None = None,
        idle_timeout: float = 600.0,
        wall_timeout: float = 3600.0,
        grace: float = 2.0,
        extra_args: list[str] | None = None,
        check_version: bool = True,
        max_line_bytes: int = DEFAULT_MAX_LINE,
    ) -> None:
        self.executable = executable
        self.model = model or "default"
        self._model_flag = model or ""
        self.workspace = Path(workspace)
        self.explicit_env = dict(env or {})
        """Values set in monkey's config for this backend: passed on after the scrub."""
        self.base_env = dict(base_env if base_env is not None else os.environ)
        self.idle_timeout = idle_timeout
        self.wall_timeout = wall_timeout
        self.grace = grace
        self.max_line_bytes = max_line_bytes
        """Bytes one line of the agent's output may have; a longer one stops the run."""
        self.extra_args = list(extra_args or [])
        self._check = check_version
        self.version: tuple[int, int, int] | None = None
        self.agent_session_id = ""
        """The agent's session (thread) id; the next call resumes it. Set it to resume a stored one."""
        self.unknown = 0
        """Lines of the agent's output no known shape fit, over all calls."""
        self.last: AgentProcess | None = None

    # -- to override -----------------------------------------------------------------

    @abstractmethod
    def argv(self, prompt: str) -> list[str]:
        """The command line of one run."""

    def stdin(self, prompt: str, images: list[ToolImage] | None = None) -> bytes:
        """What the agent reads for ``prompt``; ``images`` only where :attr:`capabilities` says it takes them."""
        return prompt.encode()

    @abstractmethod
    def parser(self) -> StreamParser:
        """A fresh parser for one run's stdout."""

    def finished(self, parser: Any) -> None:  # noqa: B027 (a hook: most agents have nothing to note)
        """Note what the run told (its session id, usage) for the next call."""

    async def converse(self, parser: Any, proc: AgentProcess, gate: ToolGate | None) -> None:  # noqa: B027 (a hook)
        """Answer what the agent asked in the output fed so far (``interactive`` agents)."""

    # -- the call --------------------------------------------------------------------

    async def stream(self, request: ModelRequest, gate: ToolGate | None = None) -> AsyncIterator[Event]:
        """Run the agent on the latest user message and stream what it does; ``gate`` decides its
        own tool calls (None: every one is refused)."""
        prompt = last_prompt(request)
        env = child_env(self.base_env, self.explicit_env)
        if self._check and self.version is None:
            lo, hi = self.version_range
            self.version = await check_version(
                [self.executable, "--version"], name=self.label, minimum=lo, below=hi, env=env
            )
        spec = ChildSpec(
            argv=self.argv(prompt),
            cwd=self.workspace,
            env=env,
            stdin=self.stdin(prompt, last_images(request)),
            idle_timeout=self.idle_timeout,
            wall_timeout=self.wall_timeout,
            grace=self.grace,
            name=self.label,
            keep_stdin=self.interactive,
        )
        proc = AgentProcess(spec)
        self.last = proc
        parser = self.parser()
        if isinstance(parser, JsonlParser):
            parser.max_line = self.max_line_bytes
        sid = request.session_id
        replace = msgspec.structs.replace
        chunks = proc.stdout()
        try:
            async for chunk in chunks:
                for event in parser.feed(chunk):
                    if isinstance(event, AgentSession):
                        self.agent_session_id = event.agent_session_id
                    elif isinstance(event, ToolResult) and gate is not None:
                        await gate.done(event.call_id, event.ok)
                    yield replace(event, session_id=sid)
                if getattr(parser, "too_long", False):
                    break  # the child is stopped as the stream closes
                if self.interactive:
                    await self.converse(parser, proc, gate)
        finally:
            await chunks.aclose()
        if getattr(parser, "too_long", False):
            raise BackendError(
                f"{self.label} printed a line longer than {self.max_line_bytes} bytes "
                "(max_line_bytes in its config section); it was stopped",
                kind="agent_error",
            )
        for event in parser.close():
            yield replace(event, session_id=sid)
        self.unknown += parser.unknown
        self.finished(parser)
        failure = proc.failure()
        if proc.stopped in ("idle", "wall"):
            raise BackendError(failure, kind="timeout")
        if parser.error:
            detail = f" ({failure})" if failure else ""
            raise BackendError(parser.error + detail, kind="agent_error")

    async def check_model(self) -> ModelCheck:
        """The agent's CLI knows its own models: it says so when it next runs."""
        return ModelCheck(None, f"not checked: {self.label} accepts or refuses it when it next runs")

    async def aclose(self) -> None:  # noqa: B027 (a hook: nothing stays running between calls)
        """Nothing stays running between calls."""
