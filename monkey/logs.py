"""Logging: the standard library's, with structured records and handlers chosen by the person.

Modules log to ``logging.getLogger(__name__)`` (under ``monkey``), with what identifies the
record as extras: ``log.info("tool finished", extra={"session_id": sid, "tool": name})``.
:func:`configure` attaches the handlers once, at start:

- ``-v`` / ``-vv`` (``--verbose``): readable lines on stderr (INFO / DEBUG; coloured on a
  terminal), never while the full-screen app owns the terminal;
- ``--log-file PATH`` or ``[logging] file``: one JSON object per record (time, level,
  logger, message, every extra, the exception), rotated at ``max_bytes``;
- ``[logging] handlers``: more handlers by import path (``package.module:factory``, a callable
  returning a :class:`logging.Handler`), for teams that ship logs elsewhere.

Nothing is printed by default. Only the person's own config may name a file or a handler
(they write files and import code).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["configure", "JsonLines", "HumanLines", "LogSetupError", "ROOT", "log_events"]

ROOT = "monkey"
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_COLOURS = {
    "DEBUG": "\x1b[2m",
    "INFO": "\x1b[36m",
    "WARNING": "\x1b[33m",
    "ERROR": "\x1b[31m",
    "CRITICAL": "\x1b[1;31m",
}


class LogSetupError(Exception):
    """A log file or handler that cannot be used (the message says which and why)."""


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonLines(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``message``, the extras, ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _extras(record).items():
            data[key] = value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else repr(value)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=repr)


class HumanLines(logging.Formatter):
    """``12:00:01 INFO monkey.agent.loop: tool finished  session_id=s1 tool=file_read``."""

    def __init__(self, colour: bool) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        from monkey.safe_text import escape_controls

        when = time.strftime("%H:%M:%S", time.localtime(record.created))
        extras = " ".join(f"{k}={v}" for k, v in _extras(record).items())
        line = escape_controls(f"{record.getMessage()}{'  ' + extras if extras else ''}", keep_newlines=False)
        level = record.levelname
        if self.colour:
            level = f"{_COLOURS.get(level, '')}{level}\x1b[0m"
        text = f"{when} {level} {record.name}: {line}"
        if record.exc_info:
            text += "\n" + escape_controls(self.formatException(record.exc_info))
        return text


def _factory(path: str) -> logging.Handler:
    module, _, name = path.partition(":")
    if not module or not name:
        raise LogSetupError(f"logging handler {path!r}: expected 'package.module:factory'")
    try:
        made = getattr(importlib.import_module(module), name)()
    except Exception as exc:  # noqa: BLE001 - whatever the person's code raises is told
        raise LogSetupError(f"logging handler {path!r} could not be made: {type(exc).__name__}: {exc}") from None
    if not isinstance(made, logging.Handler):
        raise LogSetupError(f"logging handler {path!r} returned {type(made).__name__}, not a logging.Handler")
    return made


def configure(
    *,
    verbose: int = 0,
    file: str = "",
    handlers: list[str] | tuple[str, ...] = (),
    max_bytes: int = 10 << 20,
    backups: int = 3,
    stderr: bool = True,
) -> None:
    """Attach monkey's handlers (replacing any attached before); raises :class:`LogSetupError`.

    ``stderr``: readable lines may go to stderr (False while the full-screen app runs).
    """
    root = logging.getLogger(ROOT)
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.propagate = False
    levels = [logging.WARNING + 1]
    if verbose and stderr:
        human = logging.StreamHandler(sys.stderr)
        human.setFormatter(HumanLines(colour=sys.stderr.isatty()))
        human.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
        root.addHandler(human)
        levels.append(human.level)
    if file:
        path = Path(file).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            from logging.handlers import RotatingFileHandler  # only with a log file (not before the app's first frame)

            handler: logging.Handler = RotatingFileHandler(
                path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
            )
        except OSError as exc:
            raise LogSetupError(f"cannot write the log file {path}: {exc.strerror or exc}") from None
        handler.setFormatter(JsonLines())
        handler.setLevel(logging.DEBUG)
        root.addHandler(handler)
        levels.append(logging.DEBUG)
    for path_name in handlers:
        made = _factory(path_name)
        root.addHandler(made)
        levels.append(made.level or logging.DEBUG)
    if not root.handlers:
        root.addHandler(logging.NullHandler())  # quiet: not even logging's last-resort stderr line
    root.setLevel(min(levels))


_QUIET = frozenset({"text_delta", "thinking_delta", "tool_output"})
"""Events not logged one by one (their text is logged whole with what ends them)."""
_INFO = frozenset(
    "session_started turn_started tool_call approval_resolved tool_result checkpoint_created undo_applied"
    " turn_completed session_ended backend_changed instructions_loaded".split()
)
_WARN = frozenset({"error", "retry", "fallback", "not_undoable"})
_FIELDS = (
    "name",
    "call_id",
    "decision",
    "by",
    "ok",
    "reason",
    "checkpoint_id",
    "backend",
    "model",
    "turn",
    "duration_ms",
    "message",
    "input_tokens",
    "output_tokens",
    "attempt",
)
_RENAMED = {"name": "tool", "message": "detail"}
"""Event fields whose names a log record keeps for itself."""
_event_log = logging.getLogger("monkey.events")


def log_events(events: list[Any]) -> None:
    """One record per event a sink is about to show (so, stored first): its type as the
    message, what identifies it (session, tool, call, decision ...) as extras."""
    for event in events:
        kind = event.type
        if kind in _QUIET:
            continue
        level = logging.WARNING if kind in _WARN else logging.INFO if kind in _INFO else logging.DEBUG
        if not _event_log.isEnabledFor(level):
            continue
        extra: dict[str, Any] = {"session_id": event.session_id, "event": kind}
        for name in _FIELDS:
            value = getattr(event, name, None)
            if value is not None and value != "":
                extra[_RENAMED.get(name, name)] = value
        _event_log.log(level, kind.replace("_", " "), extra=extra)
