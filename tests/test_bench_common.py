"""The benchmarks' pairing of a measurement with its baseline (``tools/benchmarks/common.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from benchmarks.common import paired, ratio_spread


def test_pairs_swap_their_order_every_pair_and_keep_each_side_apart() -> None:
    order: list[str] = []
    counts = {"a": 0, "b": 0}

    def measure(side: str, start: float) -> float:
        order.append(side)
        counts[side] += 1
        return start + counts[side]

    xs, ys = paired(lambda: measure("a", 10.0), lambda: measure("b", 0.0), 4)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert xs == [11.0, 12.0, 13.0, 14.0] and ys == [1.0, 2.0, 3.0, 4.0]


def test_the_spread_is_of_each_pairs_ratio_not_of_the_medians() -> None:
    # Medians of each side would give 2.0 / 1.0; the pairs' own ratios are 1, 1, 4.
    spread = ratio_spread([1.0, 2.0, 4.0], [1.0, 2.0, 1.0])
    assert spread["median"] == 1.0 and spread["min"] == 1.0 and spread["max"] == 4.0
    assert spread["each"] == [1.0, 1.0, 4.0]
    assert spread["q1"] <= spread["median"] <= spread["q3"]
    one = ratio_spread([3.0], [2.0])
    assert one["median"] == one["q1"] == one["q3"] == 1.5
