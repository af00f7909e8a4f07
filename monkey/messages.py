"""The conversation as backends see it: a provider-neutral list of messages.

The shape follows the common chat format (system / user / assistant / tool), which every
backend converts to its own wire format. Tool calls stay paired with their results by id.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from monkey.events import ToolCallSpec, ToolImage

__all__ = ["Message", "ToolSpec", "ModelRequest", "Role", "INTERRUPTED", "STOPPED_WHILE_RUNNING"]

INTERRUPTED = "interrupted: may have run"
"""The start of the result given to a tool call that started but whose result was never known
(monkey was stopped or killed while it ran): it must not be taken for a call that did nothing."""
STOPPED_WHILE_RUNNING = f"{INTERRUPTED} (the turn was stopped while it ran)"
"""The result of a call whose turn was cancelled while it ran."""

Role = Literal["user", "assistant", "tool"]


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One message of the conversation."""

    role: Role
    content: str = ""
    """Text of a user or assistant message, or the output of a tool."""
    tool_calls: list[ToolCallSpec] = []
    """Tool calls of an assistant message."""
    tool_call_id: str = ""
    """For a tool message: the id of the call it answers."""
    name: str = ""
    """For a tool message: the tool's name."""
    is_error: bool = False
    """For a tool message: whether the tool failed."""
    images: list[ToolImage] = []
    """Images of a user message (attached by the person) or a tool message (given back by the tool);
    a backend that cannot pass them on says so (:func:`monkey.backends.convert.images_note`)."""
    thinking: str = ""
    """For an assistant message: the model's reasoning, if it showed any."""
    thinking_signature: str = ""
    """For an assistant message: the provider's signature of ``thinking``, if it gave one."""


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a model is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the tool's arguments (an object schema, fully inlined)."""


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a backend needs for one model call."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = []
    session_id: str = ""
    max_tokens: int = 4096
