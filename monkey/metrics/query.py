"""The figures of a scope of sessions, in total and grouped, read from the summary rows.

A :class:`Scope` is one session (with its sub-agents' sessions), a workspace's sessions or
every workspace's, from a time on. :func:`compute` asks SQLite for everything: the scope's
sessions with their root (a recursive CTE over ``sessions``: a sub-agent's figures are its
parent's), the counters of ``stat_slots`` summed per group, and the durations of
``stat_samples`` counted per value (percentiles to three significant digits). The events
themselves are never read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monkey.metrics.figures import SAMPLE_KINDS, Figures, weighted_percentile
from monkey.store.tally import COUNTERS, slot_of

if TYPE_CHECKING:
    from monkey.store.store import SessionStore

__all__ = ["GROUPINGS", "Report", "Scope", "compute"]

GROUPINGS = ("day", "model", "backend", "tool", "session")
"""What ``--by`` accepts."""

_KEYS = {"model": "model", "backend": "backend", "tool": "tool"}


@dataclass
class Scope:
    """Which sessions' figures: ``session`` (and its sub-agents), else ``workspace``'s, else all;
    events from ``since`` (an epoch second, to the quarter hour below it) on."""

    workspace: str | None = None
    session: str | None = None
    since: float | None = None


@dataclass
class Report:
    """The totals of a scope, its groups (by ``by``), and tokens and cost per day (for the chart)."""

    by: str
    totals: Figures = field(default_factory=Figures)
    groups: dict[str, Figures] = field(default_factory=dict)
    daily: list[tuple[str, int, int]] = field(default_factory=list)
    """``(local date, tokens in + out, cost in micro-dollars)`` per day with figures, oldest first."""

    def to_dict(self, scope: Scope) -> dict[str, Any]:
        """The report as ``monkey stats --json`` prints it."""
        return {
            "scope": {"workspace": scope.workspace, "session": scope.session, "since": scope.since, "by": self.by},
            "totals": self.totals.to_dict(),
            "groups": [{"key": key, **figures.to_dict()} for key, figures in self.groups.items()],
            "daily": [{"day": day, "tokens": tokens, "cost_micros": cost} for day, tokens, cost in self.daily],
        }


def _roots(scope: Scope) -> tuple[str, tuple[Any, ...]]:
    """A recursive CTE ``roots(id, root)``: the scope's sessions, each with the session a person started."""
    params: tuple[Any, ...]
    if scope.session is not None:
        seed, params = "SELECT id, id FROM sessions WHERE id = ?", (scope.session,)
    elif scope.workspace is not None:
        seed, params = "SELECT id, id FROM sessions WHERE parent IS NULL AND workspace = ?", (scope.workspace,)
    else:
        seed, params = "SELECT id, id FROM sessions WHERE parent IS NULL", ()
    return (
        f"WITH RECURSIVE roots(id, root) AS ({seed} UNION "
        "SELECT s.id, r.root FROM sessions s JOIN roots r ON s.parent = r.id)"
    ), params


def _key(by: str) -> str:
    return (
        "r.root"
        if by == "session"
        else "''"
        if not by
        else f"x.{_KEYS[by]}"
        if by != "day"
        else "date(x.slot, 'unixepoch', 'localtime')"
    )


def _since(scope: Scope, params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    if scope.since is None:
        return "", params
    return " AND x.slot >= ?", (*params, slot_of(scope.since))


async def _counts(store: SessionStore, scope: Scope, by: str) -> dict[str, Figures]:
    """The counters of each group (one group, ``''``, without ``by``), summed by SQLite."""
    roots, params = _roots(scope)
    since, params = _since(scope, params)
    sums = ", ".join("SUM(x.turns * (r.id = r.root))" if c == "turns" else f"SUM(x.{c})" for c in COUNTERS)
    rows = await store.fetchall(
        f"{roots} SELECT {_key(by)}, COUNT(DISTINCT r.root), {sums} FROM roots r JOIN stat_slots x "
        f"ON x.session_id = r.id{since} GROUP BY 1",
        params,
        doing="read the stats",
    )
    out: dict[str, Figures] = {}
    for group, sessions, *counts in rows:
        figures = out[group] = Figures(sessions=sessions)
        figures.add_counts(counts)
    return out


async def _samples(store: SessionStore, scope: Scope, by: str) -> dict[str, dict[str, list[tuple[float, int]]]]:
    """The durations of each group, by kind: ``(value, how many)``, counted by SQLite."""
    roots, params = _roots(scope)
    since, params = _since(scope, params)
    rows = await store.fetchall(
        f"{roots} SELECT {_key(by)}, x.kind, x.value, SUM(x.n) FROM roots r "
        f"JOIN stat_samples x ON x.session_id = r.id{since} GROUP BY 1, 2, 3",
        params,
        doing="read the stats",
    )
    out: dict[str, dict[str, list[tuple[float, int]]]] = {}
    for group, kind, value, n in rows:
        kinds = out.get(group)
        if kinds is None:
            kinds = out[group] = {k: [] for k in SAMPLE_KINDS}
        if kind in kinds:
            kinds[kind].append((value, n))
    return out


def _percentiles(figures: Figures, kinds: dict[str, list[tuple[float, int]]]) -> None:
    for kind, counted in kinds.items():
        figures.percentiles[kind] = {"p50": weighted_percentile(counted, 50), "p95": weighted_percentile(counted, 95)}


async def compute(store: SessionStore, scope: Scope, by: str = "") -> Report:
    """The figures of ``scope``, grouped by ``by`` (one of :data:`GROUPINGS`, or ``""``: totals only)."""
    if by and by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    report = Report(by=by)
    report.totals = (await _counts(store, scope, "")).get("", Figures())
    samples = await _samples(store, scope, by)
    every: dict[str, list[tuple[float, int]]] = {k: [] for k in SAMPLE_KINDS}
    for kinds in samples.values():
        for kind, values in kinds.items():
            every[kind] += values
    _percentiles(report.totals, every)
    if by:
        groups = await _counts(store, scope, by)
        for group, kinds in samples.items():
            _percentiles(groups.setdefault(group, Figures()), kinds)
        if by == "tool":
            groups.pop("", None)  # the rows of model calls and the session's own figures: no tool's
        report.groups = dict(sorted(groups.items(), key=lambda item: _order(by, item)))
    roots, params = _roots(scope)
    since, params = _since(scope, params)
    daily = await store.fetchall(
        f"{roots} SELECT date(x.slot, 'unixepoch', 'localtime'), SUM(x.input_tokens + x.output_tokens), "
        f"SUM(x.cost_micros) FROM roots r JOIN stat_slots x ON x.session_id = r.id{since} GROUP BY 1 ORDER BY 1",
        params,
        doing="read the stats",
    )
    report.daily = [(d, int(t or 0), int(c or 0)) for d, t, c in daily if t or c]
    return report


def _order(by: str, item: tuple[str, Figures]) -> tuple[Any, ...]:
    """Days in time order; tools by calls; models, backends and sessions by cost, then tokens."""
    key, figures = item
    if by == "day":
        return (key,)
    if by == "tool":
        return (-figures.counts["tool_calls"], key)
    return (-figures.cost_micros, -figures.counts["input_tokens"] - figures.counts["output_tokens"], key)
