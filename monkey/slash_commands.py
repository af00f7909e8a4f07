"""The slash commands both front ends (the app and the ``--plain`` REPL) understand."""

from __future__ import annotations

__all__ = ["COMMANDS"]

COMMANDS: dict[str, str] = {
    "/help": "show the commands and keys",
    "/undo": "undo the latest change monkey made",
    "/checkpoints": "browse this session's checkpoints",
    "/sessions": "browse stored sessions",
    "/resume": "resume a stored session",
    "/model": "show or switch the model (/model NAME)",
    "/backend": "list or switch backends (/backend NAME [MODEL])",
    "/compact": "summarise older messages to free context",
    "/clear": "start a new conversation",
    "/events": "show or hide the event pane (↓ from its filter picks an event, Enter shows its JSON)",
    "/approvals": "list session approvals (/approvals revoke N)",
    "/exit": "quit",
}
"""Slash commands and what they do."""
