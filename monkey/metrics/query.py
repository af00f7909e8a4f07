"""The figures of a scope of sessions, in total and grouped, read from the summary rows.

A :class:`Scope` is one session (with its sub-agents' sessions), a workspace's sessions or
every workspace's, from a time on. :func:`compute` sums ``stat_slots`` and collects
``stat_samples`` with one query each (SQLite groups; Python only folds sub-agents into their
root session and takes percentiles), so a store of a million events answers in well under a
second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monkey.metrics.figures import Figures
from monkey.store.tally import COUNTERS, slot_of

if TYPE_CHECKING:
    from monkey.store.store import SessionStore

__all__ = ["Scope", "Report", "compute", "GROUPINGS"]

GROUPINGS = ("day", "model", "backend", "tool", "session")
"""What ``--by`` accepts."""

_KEYS = {
    "": "''",
    "day": "date(slot, 'unixepoch', 'localtime')",
    "model": "model",
    "backend": "backend",
    "tool": "tool",
    "session": "''",  # folded into the root session in Python
}


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


async def _sessions(store: SessionStore, scope: Scope) -> dict[str, str]:
    """The scope's sessions, each with its root (the session a person started)."""
    if scope.session is not None:
        rows = await store.fetchall(
            "WITH RECURSIVE tree(id, root) AS (SELECT ?, ? UNION SELECT s.id, t.root FROM sessions s "
            "JOIN tree t ON s.parent = t.id) SELECT id, root FROM tree", (scope.session, scope.session),
            doing="read the stats")
        return {sid: root for sid, root in rows}
    if scope.workspace is not None:
        rows = await store.fetchall("SELECT id, parent FROM sessions WHERE workspace = ?", (scope.workspace,),
                                    doing="read the stats")
    else:
        rows = await store.fetchall("SELECT id, parent FROM sessions", doing="read the stats")
    parent = {sid: up for sid, up in rows}
    roots: dict[str, str] = {}
    for sid in parent:
        root, seen = sid, {sid}
        while parent.get(root) and parent[root] in parent and parent[root] not in seen:
            root = parent[root]
            seen.add(root)
        roots[sid] = root
    return roots


def _where(scope: Scope, roots: dict[str, str]) -> tuple[str, tuple[Any, ...]]:
    clauses: list[str] = []
    params: list[Any] = []
    if scope.session is not None:
        clauses.append(f"session_id IN ({', '.join('?' * len(roots))})")
        params += list(roots)
    elif scope.workspace is not None:
        clauses.append("session_id IN (SELECT id FROM sessions WHERE workspace = ?)")
        params.append(scope.workspace)
    if scope.since is not None:
        clauses.append("slot >= ?")
        params.append(slot_of(scope.since))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


async def compute(store: SessionStore, scope: Scope, by: str = "") -> Report:
    """The figures of ``scope``, grouped by ``by`` (one of :data:`GROUPINGS`, or ``""``: totals only)."""
    if by and by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    roots = await _sessions(store, scope)
    report = Report(by=by)
    if not roots:
        return report
    where, params = _where(scope, roots)
    key = _KEYS[by]
    sums = ", ".join(f"SUM({c})" for c in COUNTERS)
    rows = await store.fetchall(f"SELECT {key}, session_id, {sums} FROM stat_slots{where} GROUP BY 1, 2",
                                params, doing="read the stats")
    turns = COUNTERS.index("turns")
    for group, sid, *counts in rows:
        if sid not in roots:
            continue  # a session deleted while its rows were read
        root = roots[sid]
        if root != sid:
            counts[turns] = 0  # a sub-agent's turns are inside its parent's
        name = root if by == "session" else group
        figures = report.groups.setdefault(name, Figures()) if by else report.totals
        figures.add_counts(counts)
        figures.sessions.add(root)
    samples = await store.fetchall(f"SELECT {key}, session_id, kind, value FROM stat_samples{where}", params,
                                   doing="read the stats")
    for group, sid, kind, value in samples:
        if sid not in roots or kind not in report.totals.samples:
            continue
        name = roots[sid] if by == "session" else group
        figures = report.groups.setdefault(name, Figures()) if by else report.totals
        figures.samples[kind].append(value)
    if by:
        if by == "tool":
            report.groups.pop("", None)  # the rows of model calls and the session's own figures: no tool's
            report.totals = (await compute(store, scope)).totals
        else:
            for figures in report.groups.values():
                report.totals.add(figures)
        report.groups = dict(sorted(report.groups.items(), key=lambda item: _order(by, item)))
    day = _KEYS["day"]
    daily = await store.fetchall(
        f"SELECT {day}, SUM(input_tokens + output_tokens), SUM(cost_micros) FROM stat_slots{where} GROUP BY 1 "
        "ORDER BY 1", params, doing="read the stats")
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
