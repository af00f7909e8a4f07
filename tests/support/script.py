"""Builders of scripted-backend turns (the JSON of ``--script`` and of ``write_script``)."""

from __future__ import annotations

from typing import Any


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    """One tool call of a turn: ``{"name": NAME, "arguments": {...}}`` (an argument may be called ``name``)."""
    return {"name": name, "arguments": arguments}


def call_turn(name: str, /, **arguments: Any) -> dict[str, Any]:
    """A whole turn that makes one tool call: ``{"tool_calls": [call(NAME, ...)]}``."""
    return {"tool_calls": [call(name, **arguments)]}
