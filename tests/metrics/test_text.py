"""The figures' words for a terminal: counts of things said in the singular when there is one."""

from __future__ import annotations

import pytest

from monkey.metrics.text import plural


@pytest.mark.parametrize(
    ("n", "noun", "said"),
    [
        (0, "turn", "0 turns"),
        (1, "turn", "1 turn"),
        (2, "model call", "2 model calls"),
        (1200, "session", "1,200 sessions"),
    ],
)
def test_plural(n: int, noun: str, said: str) -> None:
    assert plural(n, noun) == said
