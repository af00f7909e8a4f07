"""The per-session summary rows ``monkey stats`` reads, kept as events are stored.

A :class:`Tally` follows one session's events in the recorder (the store's one write path)
and turns them into statements written in the same transaction as the events:

- ``stat_slots``: integer counters per session, quarter hour (``slot``: the epoch second its
  15 minutes start at, so a day in any time zone is a whole number of slots), backend, model
  and tool (``''`` on the rows of model calls and the session's own figures);
- ``stat_samples``: how many durations of each value were measured (``kind``: ``ttft`` and
  ``call`` per model call, ``tool`` per tool call that ran, ``answer`` per question a person
  answered), to three significant digits, so percentiles are read to 0.5% from few rows.

Cost is kept in integer micro-dollars (``cost_micros``), so sums do not drift. The migration
that adds the tables fills them for sessions stored before (see :mod:`monkey.store.schema`).
"""

from __future__ import annotations

import math
from typing import Any

from monkey import events as ev

__all__ = ["COUNTERS", "SLOT", "TALLIED", "Tally", "micros", "quantize", "slot_of"]

SLOT = 900
"""Seconds per slot: every time zone's offset is a multiple of 15 minutes."""

COUNTERS = (
    "turns",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "cost_micros",
    "timed_calls",
    "call_us",
    "timed_output_tokens",
    "tool_calls",
    "tool_ok",
    "tool_failed",
    "tool_denied_rule",
    "tool_denied_person",
    "tool_cancelled",
    "approvals",
    "answers_approved",
    "answers_approved_session",
    "answers_approved_always",
    "answers_denied",
    "lines_added",
    "lines_removed",
    "files_changed",
    "undos",
    "subagents",
    "budgets",
    "compactions",
)
"""The integer columns of ``stat_slots``, in order."""
_AT = {name: i for i, name in enumerate(COUNTERS)}

TALLIED = frozenset(
    "session_started backend_changed fallback turn_started message_completed usage tool_call tool_result"
    " approval_requested approval_resolved turn_completed session_ended undo_applied subagent_started"
    " budget_reached context_compacted".split()
)
"""Event types a tally reads (the recorder hands it no other)."""

UPSERT = (
    f"INSERT INTO stat_slots (session_id, slot, backend, model, tool, {', '.join(COUNTERS)}) "
    f"VALUES (?, ?, ?, ?, ?, {', '.join('?' * len(COUNTERS))}) "
    "ON CONFLICT (session_id, slot, backend, model, tool) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in COUNTERS)
)
SAMPLE = (
    "INSERT INTO stat_samples (session_id, slot, backend, model, tool, kind, value, n) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, slot, backend, model, tool, kind, value) "
    "DO UPDATE SET n = n + excluded.n"
)


def quantize(ms: float) -> float:
    """A duration to three significant digits (percentiles are read to 0.5%; equal ones share a row)."""
    if not ms > 0:
        return 0.0
    return float(f"{ms:.3g}")


def slot_of(ts: float) -> int:
    """The slot an event at ``ts`` falls in."""
    second = int(ts)
    return second - second % SLOT


def micros(dollars: float) -> int:
    """US dollars as integer micro-dollars (negative or absurd values count as 0)."""
    if not isinstance(dollars, (int, float)) or math.isnan(dollars) or dollars <= 0 or dollars > 1e9:
        return 0
    return round(dollars * 1_000_000)


class Tally:
    """The summary rows one session's events add, until :meth:`statements` takes them."""

    __slots__ = ("answers", "asked", "backend", "model", "open", "rows", "samples")

    def __init__(self) -> None:
        self.backend = ""
        self.model = ""
        self.rows: dict[tuple[int, str, str, str], list[int]] = {}
        self.samples: dict[tuple[int, str, str, str, str, float], int] = {}
        self.open: dict[str, tuple[str, float]] = {}
        """Calls of the turn that have no result yet: their tool and when they began."""
        self.asked: set[str] = set()
        """Calls whose question is put to a person and not answered yet."""
        self.answers = 0
        """Model responses not yet counted: each is counted with the model its usage names."""

    def _row(self, ts: float, tool: str = "", model: str | None = None) -> list[int]:
        key = (slot_of(ts), self.backend, self.model if model is None else model, tool)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0] * len(COUNTERS)
        return row

    def _sample(self, ts: float, tool: str, kind: str, value: float, model: str | None = None) -> None:
        key = (slot_of(ts), self.backend, self.model if model is None else model, tool, kind, quantize(value))
        self.samples[key] = self.samples.get(key, 0) + 1

    def add(self, event: ev.Event, kind: str = "") -> None:
        """Count one event (of a type in :data:`TALLIED`; any other is ignored); ``kind``: its
        type when the caller knows it already."""
        handler = _HANDLERS.get(kind or event.__struct_config__.tag)  # type: ignore[arg-type]
        if handler is not None:
            handler(self, event)

    def _usage(self, event: ev.Usage) -> None:
        model = self.model = event.model or self.model  # the model that answered (a dated id, say)
        row = self._row(event.ts, model=model)
        row[_CALLS] += self.answers
        self.answers = 0
        out = event.output_tokens if event.output_tokens > 0 else 0
        row[_IN] += event.input_tokens if event.input_tokens > 0 else 0
        row[_OUT] += out
        row[_CACHE_READ] += event.cache_read_tokens if event.cache_read_tokens > 0 else 0
        row[_CACHE_WRITE] += event.cache_creation_tokens if event.cache_creation_tokens > 0 else 0
        if event.cost_usd:
            row[_COST] += micros(event.cost_usd)
        if event.duration_ms > 0:
            row[_TIMED] += 1
            row[_CALL_US] += round(event.duration_ms * 1000)
            row[_TIMED_OUT] += out
            self._sample(event.ts, "", "call", event.duration_ms, model)
            self._sample(event.ts, "", "ttft", event.ttft_ms, model)

    def _result(self, event: ev.ToolResult) -> None:
        self.open.pop(event.call_id, None)
        self.asked.discard(event.call_id)
        row = self._row(event.ts, event.name)
        row[_AT["tool_calls"]] += 1
        if event.ok:
            row[_AT["tool_ok"]] += 1
        elif event.denied_by == "person":
            row[_AT["tool_denied_person"]] += 1
        elif event.denied_by:
            row[_AT["tool_denied_rule"]] += 1
        else:
            row[_AT["tool_failed"]] += 1
        if not event.denied_by:
            self._sample(event.ts, event.name, "tool", event.duration_ms)
        if event.files_changed:
            row[_AT["lines_added"]] += max(0, event.lines_added)
            row[_AT["lines_removed"]] += max(0, event.lines_removed)
            row[_AT["files_changed"]] += max(0, event.files_changed)

    def _resolved(self, event: ev.ApprovalResolved) -> None:
        if event.call_id in self.asked and event.by == "user":
            self.asked.discard(event.call_id)
            column = f"answers_{event.decision}"
            if column in _AT:
                self._row(event.ts, event.name)[_AT[column]] += 1
            self._sample(event.ts, event.name, "answer", event.wait_ms)

    def _asked(self, event: ev.ApprovalRequested) -> None:
        self.asked.add(event.call_id)
        self._row(event.ts, event.name)[_AT["approvals"]] += 1

    def _started(self, event: ev.SessionStarted) -> None:
        self._cancel(event.ts)  # a resumed session: what was open did not end in this run
        self.backend, self.model = event.backend, event.model

    def _cancel(self, ts: float) -> None:
        """The turn ended: each call still open never gave a result (it was cancelled); a response
        whose usage never came is counted with the model last known."""
        if self.answers:
            self._row(ts)[_AT["model_calls"]] += self.answers
            self.answers = 0
        for name, _ in self.open.values():
            row = self._row(ts, name)
            row[_AT["tool_calls"]] += 1
            row[_AT["tool_cancelled"]] += 1
        self.open.clear()
        self.asked.clear()

    def statements(self, session_id: str) -> list[tuple[str, Any, bool]]:
        """The statements that add what was counted since the last call (then it starts afresh)."""
        out: list[tuple[str, Any, bool]] = []
        if self.rows:
            out.append((UPSERT, [(session_id, *key, *row) for key, row in self.rows.items()], True))
            self.rows = {}
        if self.samples:
            out.append((SAMPLE, [(session_id, *key, n) for key, n in self.samples.items()], True))
            self.samples = {}
        return out


def _counter(column: str) -> Any:
    """A handler that counts one of ``column`` on the session's own row."""
    at = _AT[column]

    def count(tally: Tally, event: Any) -> None:
        tally._row(event.ts)[at] += 1

    return count


def _answered(tally: Tally, event: Any) -> None:
    tally.answers += 1


def _switch(tally: Tally, event: Any) -> None:
    if isinstance(event, ev.BackendChanged):
        tally.backend, tally.model = event.to_backend, event.to_model
    elif isinstance(event, ev.Fallback):
        tally.backend, tally.model = event.to_backend, event.model or tally.model


def _opened(tally: Tally, event: Any) -> None:
    tally.open[event.call_id] = (event.name, event.ts)


def _ended(tally: Tally, event: Any) -> None:
    tally._cancel(event.ts)


_IN, _OUT, _CACHE_READ, _CACHE_WRITE, _COST, _TIMED, _CALL_US, _TIMED_OUT, _CALLS = (
    _AT[c]
    for c in (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
        "cost_micros",
        "timed_calls",
        "call_us",
        "timed_output_tokens",
        "model_calls",
    )
)
_HANDLERS: dict[str, Any] = {
    "usage": Tally._usage,
    "tool_result": Tally._result,
    "approval_resolved": Tally._resolved,
    "approval_requested": Tally._asked,
    "session_started": Tally._started,
    "tool_call": _opened,
    "turn_completed": _ended,
    "session_ended": _ended,
    "backend_changed": _switch,
    "fallback": _switch,
    "message_completed": _answered,
    "turn_started": _counter("turns"),
    "undo_applied": _counter("undos"),
    "subagent_started": _counter("subagents"),
    "budget_reached": _counter("budgets"),
    "context_compacted": _counter("compactions"),
}
assert set(_HANDLERS) == TALLIED
