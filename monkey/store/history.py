"""What a resumed session shows: its earlier turns rebuilt from the stored events.

The conversation nodes hold what the model is sent (compacted, tool results elided); the
events hold what a person saw. A resumed transcript is therefore built from the events: each
message the person sent, each answer, and each tool call with its result, in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monkey.events import DecodeError, MessageCompleted, ToolCallEvent, ToolResult, TurnStarted, decode

__all__ = ["HISTORY_TYPES", "Said", "ToolUse", "HistoryItem", "history_items"]

HISTORY_TYPES = ("turn_started", "message_completed", "tool_call", "tool_result")
"""The event types :func:`history_items` reads (the store returns only these)."""


@dataclass(frozen=True)
class Said:
    """A message the person sent (``role`` user) or an answer of the agent (``role`` assistant)."""

    role: str
    text: str


@dataclass(frozen=True)
class ToolUse:
    """One tool call and, when it finished, its result."""

    call: ToolCallEvent
    result: ToolResult | None = None


HistoryItem = Said | ToolUse


def history_items(lines: Iterable[bytes]) -> list[HistoryItem]:
    """The earlier conversation, as a person saw it, from stored event lines.

    Lines of other types, and lines that do not decode, are skipped: a damaged row loses
    only itself. A tool call without a result (monkey was killed while it ran) is kept.
    """
    items: list[HistoryItem] = []
    calls: dict[str, int] = {}
    for line in lines:
        try:
            event = decode(line)
        except DecodeError:  # a row that is not JSON at all: show the rest
            continue
        if isinstance(event, TurnStarted):
            if event.prompt:
                items.append(Said("user", event.prompt))
        elif isinstance(event, MessageCompleted):
            if event.text:
                items.append(Said("assistant", event.text))
        elif isinstance(event, ToolCallEvent):
            calls[event.call_id] = len(items)
            items.append(ToolUse(event))
        elif isinstance(event, ToolResult):
            at = calls.pop(event.call_id, None)
            if at is not None:
                use = items[at]
                assert isinstance(use, ToolUse)
                items[at] = ToolUse(use.call, event)
    return items
