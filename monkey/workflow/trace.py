"""The trace of a workflow: one JSON line per stage in ``<monkey home>/workflows/<id>.jsonl``,
and its table (``monkey workflows show ID``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["Trace", "trace_path", "read_trace", "trace_table", "TraceError"]


class TraceError(Exception):
    """A trace that is not there or cannot be read."""


def trace_path(home: Path, workflow_id: str) -> Path:
    """Where the trace of ``workflow_id`` is kept."""
    return home / "workflows" / f"{workflow_id}.jsonl"


class Trace:
    """Appends a workflow's lines, each written whole and synced (a crash loses at most the line being written)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, line: dict[str, Any]) -> None:
        """Append one line."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def read_trace(home: Path, ref: str) -> tuple[str, list[dict[str, Any]]]:
    """The id and lines of the workflow ``ref`` names (its id, or a unique prefix of it).

    Raises:
        TraceError: no such workflow, several match, or the file cannot be read.
    """
    folder = home / "workflows"
    ref = ref.strip()
    if not ref or "/" in ref or ref.startswith("."):
        raise TraceError(f"no workflow {ref!r}: give its id (monkey workflows list shows them)")
    exact = folder / f"{ref}.jsonl"
    found = [exact] if exact.is_file() else sorted(folder.glob(f"{ref}*.jsonl")) if folder.is_dir() else []
    if not found:
        raise TraceError(f"no workflow {ref!r} in {folder} (monkey workflows list shows them)")
    if len(found) > 1:
        raise TraceError(f"{ref!r} names {len(found)} workflows: " + ", ".join(p.stem for p in found[:5]))
    lines: list[dict[str, Any]] = []
    try:
        text = found[0].read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"cannot read {found[0]}: {exc.strerror or exc}") from None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            lines.append({"stage": "?", "outcome": f"line {n} is damaged"})
            continue
        if isinstance(line, dict):
            lines.append(line)
    return found[0].stem, lines


def trace_table(lines: list[dict[str, Any]]) -> list[str]:
    """The trace as a table: one row per stage, then the totals."""
    head = ("#", "stage", "iter", "outcome", "tokens in", "tokens out", "cost $", "wall s", "verdict / reason")
    rows: list[tuple[str, ...]] = []
    tokens_in = tokens_out = 0
    cost = wall = 0.0
    for n, line in enumerate(lines, 1):
        t_in, t_out = int(line.get("input_tokens", 0) or 0), int(line.get("output_tokens", 0) or 0)
        c, w = float(line.get("cost_usd", 0) or 0), float(line.get("wall_s", 0) or 0)
        tokens_in, tokens_out, cost, wall = tokens_in + t_in, tokens_out + t_out, cost + c, wall + w
        said = " — ".join(x for x in (str(line.get("verdict", "") or ""), str(line.get("reason", "") or "")) if x)
        said = " ".join(said.split())
        rows.append(
            (
                str(n),
                str(line.get("stage", "?")),
                str(line.get("iteration", "")),
                str(line.get("outcome", "")),
                str(t_in),
                str(t_out),
                f"{c:.4f}",
                f"{w:.1f}",
                said[:70] + ("…" if len(said) > 70 else ""),
            )
        )
    rows.append(("", "total", "", "", str(tokens_in), str(tokens_out), f"{cost:.4f}", f"{wall:.1f}", ""))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = {0, 2, 4, 5, 6, 7}

    def fmt(row: tuple[str, ...]) -> str:
        cells = (
            cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=False))
        )
        return "  ".join(cells).rstrip()

    return [fmt(head), fmt(tuple("-" * w for w in widths)), *(fmt(r) for r in rows)]
