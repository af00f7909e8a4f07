"""The slash commands both front ends (the app and the ``--plain`` REPL) understand."""

from __future__ import annotations

__all__ = ["COMMANDS", "last_answer", "copied_note"]

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
    "/copy": "copy the last answer to the clipboard",
    "/exit": "quit",
}
"""Slash commands and what they do."""


def last_answer(messages) -> str:  # type: ignore[no-untyped-def]  # list[Message]
    """The text of the model's latest answer in ``messages`` (``""`` when there is none yet)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.content.strip():
            return message.content
    return ""


def copied_note(text: str, what: str) -> str:
    """What a front end says after copying ``text``."""
    lines = text.count("\n") + 1
    return f"copied {what} to the clipboard ({len(text)} characters, {lines} line{'s' if lines != 1 else ''})"
