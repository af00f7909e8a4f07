"""What ends a turn early besides the model: budgets (checked before each model call, after each
response, before each tool call, and a wall-clock timer) and a model repeating the same call.

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
    return BudgetReached(session_id=session_id, budget=over.budget, used=over.used, limit=over.limit,
                         owner=over.owner, scope=over.scope, earlier=over.earlier)


def check_budget(budget: Budget, session_id: str, emit: Emit, *, starting: bool = False,
                 close: Callable[[], None] = lambda: None) -> None:
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


def check_repeats(calls: list[ToolCallSpec], state: list[tuple[str, int]], max_repeats: int,
                  drop: Callable[[], object]) -> None:
    """Stop the turn when the model asks for the same call ``max_repeats`` times in a row (``drop``
    takes back the assistant message whose calls will not run)."""
    for call in calls:
        key = call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str)
        last, count = state[0]
        count = count + 1 if key == last else 1
        state[0] = (key, count)
        if count >= max_repeats:
            drop()
            args = json.dumps(call.arguments, default=str)
            if len(args) > 120:
                args = args[:117] + "..."
            raise StopTurn(
                "error",
                f"the model asked for the same call {count} times in a row ({call.name} {args}); "
                "stopped, it is not making progress",
            )


_CUT_OFF = {"max_tokens": "the model reached its output token limit",
            "refusal": "the model refused to go on",
            "repetition": "the model repeated itself and was stopped"}
"""Stop reasons of a final answer that did not end on its own, and what they mean."""


def cut_off(stop_reason: str) -> str:
    """What a person is told when the turn's final answer ended by ``stop_reason`` ("" when it ended
    on its own: ``end_turn``, a stop sequence)."""
    if stop_reason in ("", "end_turn", "tool_use", "stop_sequence"):
        return ""
    why = _CUT_OFF.get(stop_reason, "the model stopped early")
    return f"the answer was cut off: {why} (stop reason {stop_reason})"
