"""What a plugin is sent for one run: ``agent.run``'s ``prompt``, ``context`` and ``tools``.

A plugin keeps no state across runs (each turn starts it afresh), so the conversation is
handed over every time, in this documented shape (``docs/plugins.md``):

- ``prompt``: the person's latest message (consecutive user messages at the end, joined);
- ``context.session_id`` (also as ``task_id``, the seed's name), ``context.workspace`` (the
  absolute folder monkey works in; tools' paths are relative to it), ``context.files`` (the
  workspace paths the conversation's tool calls touched, in order), ``context.history``
  (the earlier messages: ``{"role": "user"|"assistant", "content": ...}``, an assistant's
  tool calls as ``tool_calls: [{"name", "input"}]``, a tool's result as ``{"role": "tool",
  "name", "content", "is_error"}`` cut to :data:`HISTORY_RESULT_CHARS`), and
  ``context.instructions`` (monkey's system prompt, with the project's ``AGENTS.md``);
- ``tools``: monkey's tools as ``{"name", "description", "input_schema"}``, only when the
  plugin declares the ``tool_use`` capability.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monkey.backends.base import BackendError
from monkey.messages import Message, ModelRequest, ToolSpec

__all__ = ["HISTORY_RESULT_CHARS", "run_params", "tool_schemas"]

HISTORY_RESULT_CHARS = 4000
"""Characters of one earlier tool result in ``context.history``."""


def tool_schemas(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """monkey's tools in the seed's shape."""
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


def _split(messages: list[Message]) -> tuple[list[Message], str]:
    """The earlier messages and the prompt (the trailing user messages)."""
    end = len(messages)
    start = end
    while start > 0 and messages[start - 1].role == "user":
        start -= 1
    if start == end:
        raise BackendError("there is no user message to send to the plugin", kind="invalid_request")
    return messages[:start], "\n\n".join(m.content for m in messages[start:end])


def _entry(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        content = message.content
        if len(content) > HISTORY_RESULT_CHARS:
            content = (
                content[:HISTORY_RESULT_CHARS] + f"\n[... {len(message.content) - HISTORY_RESULT_CHARS} characters cut]"
            )
        return {"role": "tool", "name": message.name, "content": content, "is_error": message.is_error}
    entry: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        entry["tool_calls"] = [{"name": c.name, "input": c.arguments} for c in message.tool_calls]
    return entry


def _files(messages: list[Message]) -> list[str]:
    seen: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            path = call.arguments.get("path")
            if isinstance(path, str) and path:
                seen.setdefault(path, None)
    return list(seen)


def run_params(request: ModelRequest, workspace: Path, *, tools: bool) -> dict[str, Any]:
    """``agent.run``'s params for ``request`` (see the module's docstring)."""
    earlier, prompt = _split(request.messages)
    context = {
        "session_id": request.session_id,
        "task_id": request.session_id,
        "workspace": str(workspace),
        "files": _files(request.messages),
        "history": [_entry(m) for m in earlier],
        "instructions": request.system,
    }
    params: dict[str, Any] = {"prompt": prompt, "context": context}
    if tools:
        params["tools"] = tool_schemas(request.tools)
    return params
