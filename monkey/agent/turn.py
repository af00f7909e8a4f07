"""One turn of the agent loop (:class:`monkey.agent.loop.Agent` runs it): the user message in, model
calls and tool calls until the model answers without a tool call, a budget or ``max_iterations`` is
reached, or the turn is stopped (a denial, Esc, an error); ``turn_completed`` says which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from monkey.agent.turn_guard import (
    StopTurn,
    budget_event,
    cut_off,
    check_budget,
    check_repeats,
    wall_over,
    wall_watchdog,
)
from monkey.backends.base import BackendError, as_turn_bound
from monkey.events import EndReason, Error, Event, IterationStarted, ToolImage, TurnCompleted, TurnStarted
from monkey.extensions.hooks import MAX_STOP_BLOCKS
from monkey.messages import Message

if TYPE_CHECKING:
    from monkey.agent.background import Background
    from monkey.agent.budget import Budget, Exceeded
    from monkey.agent.calls import CallPipeline
    from monkey.backends.base import Backend
    from monkey.events import MessageCompleted, ToolCallSpec
    from monkey.extensions.hooks import HookResult

__all__ = ["run_turn", "TurnAgent"]

Emit = Callable[[Event], None]


class TurnOptions(Protocol):
    """The agent's options a turn reads (:class:`monkey.agent.loop.AgentOptions`)."""

    @property
    def max_iterations(self) -> int: ...
    @property
    def max_repeats(self) -> int: ...


class TurnAgent(Protocol):
    """What a turn uses of :class:`monkey.agent.loop.Agent` (named here, so this module need not import it)."""

    turns: int
    messages: list[Message]
    stopped_by_person: str
    _over: Exceeded | None
    _cancel_why: str
    _cancel_said: str
    _session_hooks_ran: bool
    _cleared: bool

    @property
    def session_id(self) -> str: ...
    @property
    def options(self) -> TurnOptions: ...
    @property
    def budget(self) -> Budget: ...
    @property
    def background(self) -> Background: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def agent_type(self) -> str: ...
    def calls(self) -> CallPipeline: ...
    def _budget_spent(self, emit: Emit) -> bool: ...
    def _close_unanswered(self) -> None: ...
    def _deliver_background(self) -> None: ...
    async def _call_model(self, emit: Emit) -> MessageCompleted: ...
    async def settle_processes(self, turn: int, emit: Emit) -> None: ...
    async def _hooks(
        self, event: str, emit: Emit, *, call: ToolCallSpec | None = None, target: str = "", **payload: Any
    ) -> HookResult | None: ...


async def run_turn(agent: TurnAgent, prompt: str, emit: Emit, images: list[ToolImage]) -> None:  # noqa: PLR0912, PLR0915 - the loop of one turn, each stop condition in its place; to split
    """One turn of ``agent`` on ``prompt``: model calls and tool calls until the model answers, a
    budget or a limit is reached, or the turn is stopped; ``turn_completed`` says which."""
    agent.turns += 1
    turn = agent.turns
    sid = agent.session_id
    emit(TurnStarted(session_id=sid, turn=turn, prompt=prompt, images=images))
    if not agent._session_hooks_ran or agent._cleared:  # the first turn in this process, or after /clear
        source = "clear" if agent._cleared else "resume" if agent.resumed else "startup"
        agent._session_hooks_ran, agent._cleared = True, False
        starting = (
            await agent._hooks(
                "SubagentStart", emit, target=agent.agent_type, agent_id=sid, agent_type=agent.agent_type
            )
            if agent.agent_type
            else await agent._hooks("SessionStart", emit, target=source, source=source)
        )
        if starting is not None and starting.context:
            prompt += "\n\n" + "\n".join(starting.context)
    submitted = await agent._hooks("UserPromptSubmit", emit, prompt=prompt)
    if submitted is not None and submitted.context:
        prompt += "\n\n" + "\n".join(submitted.context)
    if submitted is None or not submitted.blocked:
        agent.messages.append(Message(role="user", content=prompt, images=images))
    stop_blocks = 0
    iteration = 0
    result = ""
    reason: EndReason = "completed"
    note = stop_reason = ""
    denials: dict[str, list[str]] = {}
    """Why calls were denied by a rule or policy -> the tools denied for that reason. A person's
    denial with a reason is steering, not a failure: the turn ends by what the model does next."""
    repeats: list[str] = []
    agent.budget.start()
    watchdog = wall_watchdog(agent.budget)
    try:
        if submitted is not None and submitted.blocked:
            raise StopTurn("denied", f"the prompt was blocked by a UserPromptSubmit hook: {submitted.feedback}")
        while True:
            if iteration >= agent.options.max_iterations:
                reason = "max_iterations"
                note = f"stopped after {iteration} model calls (--max-iterations {agent.options.max_iterations})"
                break
            agent._deliver_background()
            check_budget(agent.budget, sid, emit, starting=True)
            iteration += 1
            emit(
                IterationStarted(
                    session_id=sid, turn=turn, iteration=iteration, max_iterations=agent.options.max_iterations
                )
            )
            message = await agent._call_model(emit)
            agent.messages.append(
                Message(
                    role="assistant",
                    content=message.text,
                    thinking=message.thinking,
                    thinking_signature=message.thinking_signature,
                    tool_calls=list(message.tool_calls),
                )
            )
            if not message.tool_calls:
                result, stop_reason = message.text, message.stop_reason
                if agent.background.waiting:  # sub-agents at work, or done and not yet heard: their results first
                    if iteration >= agent.options.max_iterations:
                        reason = "max_iterations"
                        note = (
                            f"stopped after {iteration} model calls (--max-iterations "
                            f"{agent.options.max_iterations}) with sub-agents still running in the background"
                        )
                        break
                    await agent.background.wait()
                    continue
                extra: dict[str, Any] = {"agent_id": sid, "agent_type": agent.agent_type} if agent.agent_type else {}
                stopping = await agent._hooks(
                    "SubagentStop" if agent.agent_type else "Stop",
                    emit,
                    target=agent.agent_type,
                    stop_hook_active=stop_blocks > 0,
                    last_assistant_message=message.text,
                    **extra,
                )
                if stopping is not None and stopping.blocked and stop_blocks < MAX_STOP_BLOCKS:
                    stop_blocks += 1  # a Stop hook sends the model back to work, a few times at most
                    agent.messages.append(
                        Message(role="user", content=f"A Stop hook says the task is not done yet:\n{stopping.feedback}")
                    )
                    continue
                break
            check_repeats(message.tool_calls, repeats, agent.options.max_repeats, agent.messages.pop)
            check_budget(agent.budget, sid, emit, close=agent._close_unanswered)
            calls = agent.calls()
            for outcome in await calls.run_all(message.tool_calls, turn, emit, lambda: agent._budget_spent(emit)):
                agent.messages.append(outcome.message)
                if outcome.denied:
                    denials.setdefault(outcome.message.content, []).append(outcome.message.name)
                if outcome.stop is not None:
                    agent._close_unanswered()
                    agent.stopped_by_person = outcome.stop.reason or "denied by the user"
                    raise StopTurn("denied", agent.stopped_by_person)
            if agent._over is not None:
                agent._close_unanswered()
                raise StopTurn("budget", agent._over.describe())
    except StopTurn as stop:
        reason, note = stop.reason, stop.message

    except BackendError as exc:
        reason, note = "error", exc.message
        emit(Error(session_id=sid, message=exc.message, kind=exc.kind, fatal=True))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        agent._close_unanswered()
        said = agent._cancel_said or "cancelled by the user"
        reason, note = ("error", agent._cancel_why) if agent._cancel_why else ("cancelled", said)
        if (over := wall_over(agent.budget)) is not None:  # the wall-clock budget's timer stopped it
            reason, note = "budget", over.describe()
            emit(budget_event(sid, over))
    except Exception as exc:  # a bug must end the turn with a message, never a traceback
        agent._close_unanswered()
        reason, note = "error", f"internal error: {type(exc).__name__}: {exc}"
        emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
    finally:
        if watchdog is not None:
            watchdog.cancel()
        agent._over = None
        await agent.background.stop()  # the turn ended with sub-agents still running: they end with it
        agent.budget.pause()  # the wall clock counts turns, not a person's time between them
    await agent.settle_processes(turn, emit)
    bound = as_turn_bound(agent.backend)
    if bound is not None:  # an agent plugin's run still open (a denial stopped it, or Esc) is closed
        await bound.end_turn()
    if reason == "completed" and denials:
        reason = "denied"
        count = sum(len(names) for names in denials.values())
        note = f"{count} tool call(s) denied: " + "; ".join(
            f"{', '.join(dict.fromkeys(names))}: {why}" for why, names in denials.items()
        )
    if reason != "completed" or not cut_off(stop_reason):
        stop_reason = ""
    emit(
        TurnCompleted(
            session_id=sid,
            turn=turn,
            reason=reason,
            result=result,
            iterations=iteration,
            message=cut_off(stop_reason) or note,
            stop_reason=stop_reason,
        )
    )
