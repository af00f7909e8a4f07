"""What ends a turn early besides the model: budgets (checked before each model call, after each
response, before each tool call, and a wall-clock timer) and a model repeating the same call or
the same cycle of calls.

A limit reached raises :class:`StopTurn`, which the loop turns into ``turn_completed`` with its
reason; it never escapes the loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from monkey.agent.budget import Budget, Exceeded
from monkey.events import BudgetReached, EndReason, Event, ToolCallSpec

__all__ = ["StopTurn", "cut_off", "budget_event", "check_budget", "check_repeats", "wall_over", "wall_watchdog"]

Emit = Callable[[Event], None]


class StopTurn(Exception):
    """Ends the turn early with a reason (control flow, never escapes the loop)."""

    def __init__(self, reason: EndReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def budget_event(session_id: str, over: Exceeded) -> BudgetReached:
    """The event that says a budget was reached."""
    return BudgetReached(
        session_id=session_id,
        budget=over.budget,
        used=over.used,
        limit=over.limit,
        owner=over.owner,
        scope=over.scope,
        earlier=over.earlier,
    )


def check_budget(
    budget: Budget, session_id: str, emit: Emit, *, starting: bool = False, close: Callable[[], None] = lambda: None
) -> None:
    """End the turn (reason ``budget``) when a budget here or above is reached; ``close`` answers the
    response's calls that will not run (not called before a model call: there are none)."""
    over = budget.check(starting=starting)
    if over is not None:
        emit(budget_event(session_id, over))
        if not starting:
            close()
        raise StopTurn("budget", over.describe())


def wall_over(budget: Budget) -> Exceeded | None:
    """The wall-clock budget, when it is the one reached (its timer cancelled the turn)."""
    over = budget.check()
    return over if over is not None and over.budget == "max_wall" else None


def wall_watchdog(budget: Budget) -> asyncio.TimerHandle | None:
    """A timer that stops the running turn when a wall-clock budget here or above runs out."""
    deadline = budget.deadline()
    task = asyncio.current_task()
    if deadline is None or task is None:
        return None
    return asyncio.get_running_loop().call_later(max(0.0, deadline - budget.clock()), task.cancel)


MAX_CYCLE = 4
"""The longest cycle of calls taken for a repetition (A, B, C, D, A, B, C, D ...)."""


def check_repeats(calls: list[ToolCallSpec], state: list[str], max_repeats: int, drop: Callable[[], object]) -> None:
    """Stop the turn when the model asks for the same call ``max_repeats`` times in a row, or for
    the same cycle of calls (A, B, A, B ... or A, B, C, A, B, C ..., up to :data:`MAX_CYCLE` calls
    long) ``max_repeats`` times in a row. ``state``: the keys of the turn's latest calls (kept
    here); ``drop`` takes back the assistant message whose calls will not run."""
    for call in calls:
        state.append(call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str))
        del state[: -MAX_CYCLE * max(max_repeats, 1)]
        period = _cycle(state, max_repeats)
        if period:
            drop()
            args = json.dumps(call.arguments, default=str)
            if len(args) > 120:
                args = args[:117] + "..."
            what = (
                f"the same call {max_repeats} times in a row ({call.name} {args})"
                if period == 1
                else f"the same {period} calls in turn {max_repeats} times over (the last: {call.name} {args})"
            )
            raise StopTurn("error", f"the model asked for {what}; stopped, it is not making progress")


def _cycle(keys: list[str], times: int) -> int:
    """The shortest period p (1..MAX_CYCLE) such that the last ``p * times`` keys are one block of
    ``p`` calls repeated ``times`` times; 0 when there is none."""
    times = max(times, 1)
    for period in range(1, MAX_CYCLE + 1):
        span = period * times
        if len(keys) < span:
            return 0
        tail = keys[-span:]
        if all(tail[i] == tail[i % period] for i in range(period, span)):
            return period
    return 0


_CUT_OFF = {
    "max_tokens": "the model reached its output token limit",
    "refusal": "the model refused to go on",
    "repetition": "the model repeated itself and was stopped",
}
"""Stop reasons of a final answer that did not end on its own, and what they mean."""


def cut_off(stop_reason: str) -> str:
    """What a person is told when the turn's final answer ended by ``stop_reason`` ("" when it ended
    on its own: ``end_turn``, a stop sequence)."""
    if stop_reason in ("", "end_turn", "tool_use", "stop_sequence"):
        return ""
    why = _CUT_OFF.get(stop_reason, "the model stopped early")
    return f"the answer was cut off: {why} (stop reason {stop_reason})"
