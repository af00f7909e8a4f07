"""Shared helpers of the benchmarks."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence


def figure(
    name: str,
    value: float,
    unit: str,
    baseline_name: str,
    baseline_value: float,
    *,
    ratio: float | None = None,
    target: str = "",
    ok: bool | None = None,
    **extra: object,
) -> dict:
    """One benchmark figure in the shape tools/bench.py prints."""
    if ratio is None:
        ratio = value / baseline_value if baseline_value else float("inf")
    fig: dict = {
        "name": name,
        "value": round(value, 6),
        "unit": unit,
        "baseline_name": baseline_name,
        "baseline_value": round(baseline_value, 6),
        "ratio": round(ratio, 4),
    }
    if target:
        fig["target"] = target
    if ok is not None:
        fig["ok"] = ok
    fig.update(extra)
    return fig


def interleaved(a: Callable[[], float], b: Callable[[], float], runs: int) -> tuple[list[float], list[float]]:
    """Run two measurements alternately so both see the same machine noise."""
    xs, ys = [], []
    for _ in range(runs):
        xs.append(a())
        ys.append(b())
    return xs, ys


def paired(a: Callable[[], float], b: Callable[[], float], pairs: int) -> tuple[list[float], list[float]]:
    """``pairs`` measurements of each, taken in pairs one after the other, the order swapped
    every pair (a busy machine slows whichever runs second as often as the first)."""
    xs, ys = [], []
    for n in range(pairs):
        if n % 2:
            ys.append(b())
            xs.append(a())
        else:
            xs.append(a())
            ys.append(b())
    return xs, ys


def ratio_spread(xs: Sequence[float], ys: Sequence[float]) -> dict:
    """The ratio of each pair (``xs[i] / ys[i]``): its median, quartiles and extremes, and each one."""
    ratios = sorted(x / y for x, y in zip(xs, ys, strict=True))
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {
        "median": statistics.median(ratios),
        "q1": round(quartiles[0], 4),
        "q3": round(quartiles[2], 4),
        "min": round(ratios[0], 4),
        "max": round(ratios[-1], 4),
        "each": [round(x / y, 4) for x, y in zip(xs, ys, strict=True)],
    }


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)


PYTHON = sys.executable
