"""One model call: the backend's stream, charged to the budget, and for an external agent
(Claude Code, Codex: ``capabilities.runs_own_tools``) the whole-tree checkpoint around its run
and the gate its own tool calls pass (:class:`~monkey.permissions.external_gate.ExternalGate`,
on the agent's own call pipeline), handed to its ``stream``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec

from monkey.agent.budget import Budget
from monkey.agent.calls import CallPipeline
from monkey.backends.base import Backend, BackendError, as_external
from monkey.events import Event, MessageCompleted, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.ids import new_id
from monkey.messages import ModelRequest
from monkey.permissions.external_gate import ExternalGate
from monkey.tools.base import ToolError

__all__ = ["stream_model"]

Emit = Callable[[Event], None]


async def stream_model(
    backend: Backend, request: ModelRequest, *, calls: CallPipeline, turn: int, emit: Emit, budget: Budget
) -> MessageCompleted:
    """Stream one model call's events to ``emit``; the completed message (a BackendError without one).

    Each ``usage`` is given the call's ``duration_ms`` and ``ttft_ms`` (time to the first text, thinking
    or message) as measured here, unless its backend measured them."""
    external = as_external(backend)
    completed: MessageCompleted | None = None
    pending = None
    if external is not None and calls.checkpoints is not None:
        run = ToolCallSpec(id=new_id("run"), name=backend.name)
        try:
            pending = await calls.begin(run, None, turn, emit)
        except ToolError as exc:
            raise BackendError(f"{exc}; {backend.name} was not started", kind="checkpoint") from None
    gate = ExternalGate(calls, turn=turn, emit=emit, checkpoints=calls.checkpoints is not None) if external else None
    stream = external.stream(request, gate=gate) if external is not None else backend.stream(request)
    asked = time.perf_counter()
    first = 0.0  # when the first output came (text, thinking or the whole message)
    try:
        with calls.spawns(pending):  # the agent's processes started for this run are its checkpoint's
            async for event in stream:
                if not first and isinstance(event, (TextDelta, ThinkingDelta, MessageCompleted)):
                    first = time.perf_counter()
                if isinstance(event, MessageCompleted):
                    completed = event
                    budget.charge(turns=1)
                elif isinstance(event, Usage):
                    budget.charge_usage(event)
                    if not event.duration_ms:
                        event = msgspec.structs.replace(
                            event,
                            duration_ms=round((time.perf_counter() - asked) * 1000, 3),
                            ttft_ms=event.ttft_ms or (round((first - asked) * 1000, 3) if first else 0.0),
                        )
                emit(event)
    finally:
        aclose = getattr(stream, "aclose", None)  # an async generator's; a plain iterator has none
        if aclose is not None:
            await aclose()
        if gate is not None:
            await asyncio.shield(gate.close())  # each call's checkpoint before the run's
        if pending is not None:
            await asyncio.shield(calls.finish(pending, completed is not None, emit))
    if completed is None:
        raise BackendError(f"the {backend.name} backend ended without a message", kind="invalid_response")
    return completed
