"""A model that repeats itself is stopped: the same call, or the same cycle of calls, over and over."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.agent.turn_guard import MAX_CYCLE, StopTurn, check_repeats
from monkey.events import ToolCallSpec


def _spec(n: int) -> ToolCallSpec:
    return ToolCallSpec(id=f"c{n}", name="shell_execute", arguments={"command": f"echo {n}"})


def _run(sequence: list[int], max_repeats: int = 3) -> int | None:
    """How many calls went through before the turn was stopped (None: never stopped)."""
    state: list[str] = []
    dropped: list[int] = []
    for i, n in enumerate(sequence):
        try:
            check_repeats([_spec(n)], state, max_repeats, lambda: dropped.append(1))
        except StopTurn:
            assert dropped == [1]
            return i
    return None


@pytest.mark.parametrize(
    ("sequence", "stopped_at"),
    [
        ([1, 1, 1], 2),
        ([1, 2, 1, 2, 1, 2], 5),
        ([1, 2, 3, 1, 2, 3, 1, 2, 3], 8),
        ([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4], 11),
        ([1, 2, 1, 2, 3, 1, 2, 3], None),
        ([1, 2, 1, 3, 1, 2, 1, 3], None),
    ],
)
def test_cycles_are_stopped_like_a_repeated_call(sequence: list[int], stopped_at: int | None) -> None:
    assert _run(sequence) == stopped_at


@given(st.lists(st.integers(0, 9), min_size=1, max_size=MAX_CYCLE), st.lists(st.integers(10, 19), max_size=6))
def test_any_short_cycle_repeated_is_stopped(block: list[int], before: list[int]) -> None:
    stopped = _run(before + block * 3)
    assert stopped is not None and stopped <= len(before) + 3 * len(block) - 1


@given(st.lists(st.integers(0, 50), unique=True, max_size=30))
def test_calls_that_never_repeat_are_never_stopped(sequence: list[int]) -> None:
    assert _run(sequence) is None


def test_calls_in_one_response_count_in_order() -> None:
    state: list[str] = []
    with pytest.raises(StopTurn, match="the same 2 calls in turn 3 times"):
        check_repeats([_spec(1), _spec(2)] * 3, state, 3, lambda: None)
