"""Shared helpers of the benchmarks."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable


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


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)


PYTHON = sys.executable
