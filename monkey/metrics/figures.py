"""The figures of a set of sessions: sums of the summary rows' counters and percentiles of their
samples, as JSON-ready data (the one shape ``monkey stats --json``, the terminal tables and
``/stats`` all read)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monkey.store.tally import COUNTERS

__all__ = ["SAMPLE_KINDS", "Figures", "percentile", "weighted_percentile"]

SAMPLE_KINDS = ("ttft", "call", "tool", "answer")
"""The durations measured: time to first token and duration of model calls, tool calls' run
time, the time a person took to answer a question."""


def weighted_percentile(counted: list[tuple[float, int]], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile of values given as ``(value, how many)``."""
    total = sum(n for _, n in counted)
    if total <= 0:
        return None
    rank = max(1, math.ceil(p / 100 * total))
    seen = 0
    for value, n in sorted(counted):
        seen += n
        if seen >= rank:
            return value
    return None


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile of ``values`` (sorted or not); None when there are none."""
    if not values:
        return None
    ordered = sorted(values)  # linear when it is sorted already
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Figures:
    """Counters (named as :data:`~monkey.store.tally.COUNTERS`), the p50 and p95 of each kind of
    duration, and how many sessions (a person started) the figures come from."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    percentiles: dict[str, dict[str, float | None]] = field(
        default_factory=lambda: {k: {"p50": None, "p95": None} for k in SAMPLE_KINDS}
    )
    sessions: int = 0

    def add_counts(self, row: Mapping[str, int] | Iterable[int]) -> None:
        values = row.values() if isinstance(row, Mapping) else row
        for name, value in zip(COUNTERS, values, strict=False):
            self.counts[name] += int(value or 0)

    @property
    def cost_micros(self) -> int:
        return self.counts["cost_micros"]

    def to_dict(self) -> dict[str, Any]:
        """Every figure, as ``monkey stats --json`` prints it (see docs/metrics.md)."""
        c = self.counts
        cached = c["cache_read_tokens"]
        prompt = c["input_tokens"] + cached + c["cache_creation_tokens"]
        seconds = c["call_us"] / 1_000_000
        answered = sum(c[f"answers_{k}"] for k in ("approved", "approved_session", "approved_always", "denied"))
        ms = {
            kind: {k: None if v is None else round(v, 1) for k, v in got.items()}
            for kind, got in self.percentiles.items()
        }
        return {
            "sessions": self.sessions,
            "turns": c["turns"],
            "model_calls": c["model_calls"],
            "tokens": {
                "input": c["input_tokens"],
                "output": c["output_tokens"],
                "cache_read": cached,
                "cache_creation": c["cache_creation_tokens"],
            },
            "cache_hit_ratio": round(cached / prompt, 4) if prompt else None,
            "cost_micros": c["cost_micros"],
            "cost_usd": c["cost_micros"] / 1_000_000,
            "ttft_ms": ms["ttft"],
            "call_ms": ms["call"],
            "tokens_per_second": round(c["timed_output_tokens"] / seconds, 1) if seconds > 0 else None,
            "tools": {
                "calls": c["tool_calls"],
                "ok": c["tool_ok"],
                "failed": c["tool_failed"],
                "denied_rule": c["tool_denied_rule"],
                "denied_person": c["tool_denied_person"],
                "cancelled": c["tool_cancelled"],
                "duration_ms": ms["tool"],
            },
            "approvals": {
                "asked": c["approvals"],
                "answered": answered,
                "answer_ms": ms["answer"],
                "answers": {
                    k: c[f"answers_{k}"] for k in ("approved", "approved_session", "approved_always", "denied")
                },
            },
            "changes": {
                "lines_added": c["lines_added"],
                "lines_removed": c["lines_removed"],
                "files_changed": c["files_changed"],
                "undos": c["undos"],
            },
            "subagents": c["subagents"],
            "budgets_reached": c["budgets"],
            "compactions": c["compactions"],
        }
