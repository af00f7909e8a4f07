"""What ``--since`` accepts: a span back from now (``30m``, ``12h``, ``7d``, ``2w``), ``today``,
or a local date (``2026-11-01``, from its midnight)."""

from __future__ import annotations

import datetime as dt
import re
import time

__all__ = ["SinceError", "parse_since"]

_SPAN = re.compile(r"([0-9]{1,6})([mhdw])")
_UNIT = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class SinceError(ValueError):
    """``--since`` was given something it does not understand; the message says what it takes."""


def parse_since(text: str, *, now: float | None = None) -> float:
    """The epoch second ``text`` names; raises :class:`SinceError`."""
    now = time.time() if now is None else now
    value = text.strip().lower()
    if value == "today":
        day = dt.datetime.fromtimestamp(now).date()
        return dt.datetime.combine(day, dt.time()).timestamp()
    span = _SPAN.fullmatch(value)
    if span:
        return now - int(span.group(1)) * _UNIT[span.group(2)]
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            raise SinceError(f"--since {text!r}: no such date") from None
        return dt.datetime.combine(day, dt.time()).timestamp()
    raise SinceError(f"--since {text!r}: give a span back from now (30m, 12h, 7d, 2w), 'today', or a date (2026-11-01)")
