"""The figures as plain text for a terminal: a summary, a table per grouping, and a chart of
tokens and cost per day drawn with block characters (``monkey stats``, ``/stats``)."""

from __future__ import annotations

from typing import Any

from monkey.metrics.figures import Figures
from monkey.safe_text import escape_controls

__all__ = ["brief", "chart", "count", "duration", "money", "plural", "summary", "table"]

_EIGHTHS = " ▏▎▍▌▋▊▉"


def money(micros: int) -> str:
    """Micro-dollars as dollars: ``$12.34``, ``$0.0042`` below a cent."""
    dollars = micros / 1_000_000
    if micros and dollars < 0.01:
        return f"${dollars:.4f}"
    return f"${dollars:,.2f}"


def count(n: float) -> str:
    """``950``, ``12.3k``, ``4.5M``."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}" if isinstance(n, int) else f"{n:.1f}"


def plural(n: int, noun: str) -> str:
    """``1 turn``, ``2 turns``, ``1,200 model calls`` (the noun's plural is ``noun + "s"``)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def duration(ms: float | None) -> str:
    """``—``, ``840 ms``, ``2.1 s``, ``3.5 min``."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


def _safe(text: str) -> str:
    return escape_controls(text, keep_newlines=False)


def summary(figures: Figures) -> list[str]:
    """The totals, one topic a line."""
    d = figures.to_dict()
    t, tools, a, ch = d["tokens"], d["tools"], d["approvals"], d["changes"]
    hit = "—" if d["cache_hit_ratio"] is None else f"{d['cache_hit_ratio']:.0%}"
    speed = "—" if d["tokens_per_second"] is None else f"{d['tokens_per_second']:.0f} tokens/s"
    answers = a["answers"]
    return [
        f"sessions {d['sessions']}   turns {d['turns']}   model calls {d['model_calls']}",
        (
            f"tokens    in {count(t['input'])}   out {count(t['output'])}   cache read {count(t['cache_read'])}   "
            f"cache written {count(t['cache_creation'])}   cache hit {hit}"
        ),
        f"cost      {money(d['cost_micros'])}",
        (
            f"model     first token p50 {duration(d['ttft_ms']['p50'])}, p95 {duration(d['ttft_ms']['p95'])}   "
            f"call p50 {duration(d['call_ms']['p50'])}, p95 {duration(d['call_ms']['p95'])}   {speed}"
        ),
        (
            f"tools     {plural(tools['calls'], 'call')}: {tools['ok']} ok, {tools['failed']} failed, "
            f"{tools['denied_rule']} denied by a rule, {tools['denied_person']} denied by a person, "
            f"{tools['cancelled']} cancelled   p50 {duration(tools['duration_ms']['p50'])}, "
            f"p95 {duration(tools['duration_ms']['p95'])}"
        ),
        (
            f"approvals {a['asked']} asked, {a['answered']} answered (p50 {duration(a['answer_ms']['p50'])}, "
            f"p95 {duration(a['answer_ms']['p95'])}): {answers['approved']} approved once, "
            f"{answers['approved_session']} for the session, {answers['approved_always']} always, "
            f"{answers['denied']} denied"
        ),
        (
            f"changes   +{ch['lines_added']} -{ch['lines_removed']} lines in {plural(ch['files_changed'], 'file')}, "
            f"{plural(ch['undos'], 'undo')}"
        ),
        (
            f"also      {plural(d['subagents'], 'sub-agent')}, {plural(d['budgets_reached'], 'budget')} reached, "
            f"{plural(d['compactions'], 'compaction')}"
        ),
    ]


def _render(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=False)]
        out.append("  ".join(cells).rstrip())
    return out


def table(by: str, groups: dict[str, Figures]) -> list[str]:
    """One row per group: tools' figures for ``tool``, the model's and the session's otherwise."""
    if not groups:
        return []
    if by == "tool":
        rows = [["tool", "calls", "ok", "failed", "denied rule", "denied person", "cancelled", "p50", "p95"]]
        for key, figures in groups.items():
            t = figures.to_dict()["tools"]
            rows.append(
                [
                    _safe(key),
                    str(t["calls"]),
                    str(t["ok"]),
                    str(t["failed"]),
                    str(t["denied_rule"]),
                    str(t["denied_person"]),
                    str(t["cancelled"]),
                    duration(t["duration_ms"]["p50"]),
                    duration(t["duration_ms"]["p95"]),
                ]
            )
        return _render(rows)
    rows = [[by, "sessions", "turns", "calls", "in", "out", "cache hit", "cost", "first token", "tools"]]
    for key, figures in groups.items():
        d: dict[str, Any] = figures.to_dict()
        hit = "—" if d["cache_hit_ratio"] is None else f"{d['cache_hit_ratio']:.0%}"
        rows.append(
            [
                _safe(key) or "(none)",
                str(d["sessions"]),
                str(d["turns"]),
                str(d["model_calls"]),
                count(d["tokens"]["input"]),
                count(d["tokens"]["output"]),
                hit,
                money(d["cost_micros"]),
                duration(d["ttft_ms"]["p50"]),
                str(d["tools"]["calls"]),
            ]
        )
    return _render(rows)


def chart(daily: list[tuple[str, int, int]], *, width: int = 32, cost: bool = False) -> list[str]:
    """A bar per day of tokens (or of cost), in eighths of a block."""
    if not daily:
        return []
    values = [c if cost else t for _, t, c in daily]
    top = max(values) or 1
    out = []
    for (day, tokens, micros), value in zip(daily, values, strict=True):
        eighths = round(value / top * width * 8)
        bar = "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")
        out.append(f"{day}  {bar.ljust(width)}  {count(tokens):>7} tokens  {money(micros):>9}")
    return out


def brief(figures: Figures) -> str:
    """The main figures on one line (``/stats``)."""
    d = figures.to_dict()
    t, tools, ch = d["tokens"], d["tools"], d["changes"]
    denied = tools["denied_rule"] + tools["denied_person"]
    hit = "" if d["cache_hit_ratio"] is None else f" ({d['cache_hit_ratio']:.0%} from the cache)"
    return (
        f"{plural(d['turns'], 'turn')}, {plural(d['model_calls'], 'model call')}, "
        f"{count(t['input'] + t['cache_read'])} tokens in{hit}, {count(t['output'])} out, {money(d['cost_micros'])}; "
        f"{plural(tools['calls'], 'tool call')} "
        f"({tools['ok']} ok, {tools['failed']} failed, {denied} denied, {tools['cancelled']} cancelled); "
        f"+{ch['lines_added']} -{ch['lines_removed']} lines"
    )
