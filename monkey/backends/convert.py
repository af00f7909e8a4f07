"""The neutral conversation (:mod:`monkey.messages`) in the Anthropic and OpenAI formats.

The conversation is kept in monkey's own format, so a session can move from one backend
to another (failover) and each backend converts the whole list when it is called. Tool
calls and their results stay paired: ids are made safe for the target format the same way
on both sides of a pair, a tool call left without a result gets one that says so, and a
result whose call is missing becomes plain user text rather than a request the server
refuses.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import msgspec

from monkey.event_base import ToolImage
from monkey.messages import Message, ModelRequest, ToolSpec

__all__ = [
    "safe_tool_id",
    "paired",
    "to_anthropic",
    "anthropic_tools",
    "to_openai",
    "openai_tools",
    "last_turn_signed",
    "bad_arguments",
    "NO_RESULT",
    "images_note",
]

NO_RESULT = "no result: the call was not run"
"""The result given to a tool call that has none in the conversation."""

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def images_note(msg: Message, why: str) -> str:
    """The text of a message whose images cannot go with it: its text and a line saying so."""
    if not msg.images:
        return msg.content
    n = len(msg.images)
    whose = "of this result" if msg.role == "tool" else "attached to this message"
    return f"{msg.content}\n[{'the image' if n == 1 else f'the {n} images'} {whose} not passed on: {why}]"


def _anthropic_image(image: ToolImage) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def _openai_image(image: ToolImage) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def bad_arguments(name: str, raw: str, why: object) -> str:
    """The result a model gets for a call whose arguments are not a JSON object."""
    shown = raw if len(raw) <= 200 else raw[:197] + "..."
    return (
        f"the arguments of this {name} call are not a valid JSON object ({why}): {shown!r}; "
        f"call {name} again with a JSON object that fits its schema"
    )


def safe_tool_id(call_id: str, index: int = 0) -> str:
    """``call_id`` in the characters every provider accepts (the same for a call and its result)."""
    if not call_id:
        return f"call_{index}"
    if len(call_id) <= 64 and not _UNSAFE_ID.search(call_id):
        return call_id
    digest = hashlib.sha1(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{_UNSAFE_ID.sub('_', call_id)[:53]}_{digest}"  # distinct ids stay distinct


def paired(messages: list[Message]) -> list[Message]:
    """The conversation with each tool call's result right after the call's message.

    A call without a result gets an error result saying so; a result whose call is not in
    an earlier assistant message becomes a user message.
    """
    messages = _unique_ids(messages)
    results: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        if m.role == "tool":
            results.setdefault(m.tool_call_id, []).append(i)
    used: set[int] = set()
    out: list[Message] = []
    for index, msg in enumerate(messages):
        if msg.role == "tool":
            if index not in used:
                label = f"result of {msg.name or 'a tool'}"
                text = images_note(msg, "the result's call is not in the conversation")
                out.append(Message(role="user", content=f"[{label}]\n{text}"))
            continue
        out.append(msg)
        for call in msg.tool_calls if msg.role == "assistant" else []:
            found = next((j for j in results.get(call.id, []) if j > index and j not in used), None)
            if found is None:
                out.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=NO_RESULT, is_error=True))
            else:
                used.add(found)
                out.append(messages[found])
    return out


def _unique_ids(messages: list[Message]) -> list[Message]:
    """Repeated call ids made unique: the n-th call and the n-th result of an id get ``id_n``."""
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    if len({c.id for m in messages for c in m.tool_calls}) == sum(len(m.tool_calls) for m in messages):
        return messages
    out: list[Message] = []
    for msg in messages:
        if msg.tool_calls:
            renamed = []
            for call in msg.tool_calls:
                n = calls[call.id] = calls.get(call.id, 0) + 1
                renamed.append(call if n == 1 else msgspec.structs.replace(call, id=f"{call.id}_{n}"))
            msg = msgspec.structs.replace(msg, tool_calls=renamed)
        elif msg.role == "tool":
            n = results[msg.tool_call_id] = results.get(msg.tool_call_id, 0) + 1
            if n > 1:
                msg = msgspec.structs.replace(msg, tool_call_id=f"{msg.tool_call_id}_{n}")
        out.append(msg)
    return out


# -- Anthropic ---------------------------------------------------------------------------

_CACHE = {"type": "ephemeral"}


def _blocks_of(msg: Message, *, signed_thinking: bool) -> list[dict[str, Any]]:
    if msg.role == "tool":
        content: str | list[dict[str, Any]] = msg.content or "(no output)"
        if msg.images:  # a tool_result's content may hold images (base64 source blocks)
            content = [{"type": "text", "text": content}] + [_anthropic_image(i) for i in msg.images]
        return [
            {
                "type": "tool_result",
                "tool_use_id": safe_tool_id(msg.tool_call_id),
                "content": content,
                **({"is_error": True} if msg.is_error else {}),
            }
        ]
    blocks: list[dict[str, Any]] = [_anthropic_image(i) for i in msg.images] if msg.role == "user" else []
    if msg.role == "assistant" and signed_thinking and msg.thinking and msg.thinking_signature:
        blocks.append({"type": "thinking", "thinking": msg.thinking, "signature": msg.thinking_signature})
    if msg.content.strip():  # the API refuses empty and whitespace-only text blocks
        blocks.append({"type": "text", "text": msg.content})
    elif msg.role == "user":
        blocks.append({"type": "text", "text": "(empty message)"})
    for i, call in enumerate(msg.tool_calls):
        blocks.append({"type": "tool_use", "id": safe_tool_id(call.id, i), "name": call.name, "input": call.arguments})
    return blocks


def to_anthropic(request: ModelRequest, *, cache: bool = True, thinking: bool = False) -> dict[str, Any]:
    """``system`` and ``messages`` of a Messages API call, with cache breakpoints.

    Breakpoints go on the system prompt and on the last block of the conversation (the
    tool list gets its own in :func:`anthropic_tools`), so each call re-reads the prefix
    the previous call wrote to the cache.
    """
    out: list[dict[str, Any]] = []
    for msg in paired(request.messages):
        role = "assistant" if msg.role == "assistant" else "user"
        blocks = _blocks_of(msg, signed_thinking=thinking)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            prev = out[-1]["content"]
            if role == "user" and blocks[0]["type"] == "tool_result":
                # tool results lead their user message
                lead = [b for b in prev if b["type"] == "tool_result"]
                rest = [b for b in prev if b["type"] != "tool_result"]
                out[-1]["content"] = lead + blocks + rest
            else:
                prev.extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if not out or out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]})
    if cache and out:
        last = out[-1]["content"][-1]
        out[-1]["content"][-1] = {**last, "cache_control": _CACHE}
    system: list[dict[str, Any]] = []
    if request.system:
        system.append({"type": "text", "text": request.system, **({"cache_control": _CACHE} if cache else {})})
    return {"system": system, "messages": out}


def anthropic_tools(tools: list[ToolSpec], *, cache: bool = True) -> list[dict[str, Any]]:
    """The tool list of a Messages API call; the last tool carries a cache breakpoint."""
    out = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
    if cache and out:
        out[-1]["cache_control"] = _CACHE
    return out


def last_turn_signed(request: ModelRequest) -> bool:
    """Whether the last assistant message with tool calls has signed thinking (extended
    thinking requires it when a tool loop is going on)."""
    for msg in reversed(request.messages):
        if msg.role == "user":
            return True
        if msg.role == "assistant" and msg.tool_calls:
            return bool(msg.thinking and msg.thinking_signature)
    return True


# -- OpenAI chat completions ------------------------------------------------------------

OPENAI_NO_IMAGES = "this server is set to take only text ([openai] images = false)"
TOOL_IMAGES = "The images the tool results above gave back, in order:"
"""The text of the user message that carries tool results' images (the chat completions API takes
only text in a tool message)."""


def to_openai(request: ModelRequest, *, images: bool = True) -> list[dict[str, Any]]:
    """The ``messages`` of a chat-completions call; ``images``: the server reads images (a vision model):
    a person's images go as image parts of their message, a tool result's in a user message after the
    results; otherwise each is replaced by a line saying so."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    held: list[ToolImage] = []
    for msg in paired(request.messages):
        if held and msg.role != "tool":
            out.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES}, *map(_openai_image, held)]})
            held = []
        if msg.role == "tool":
            content = (msg.content if images else images_note(msg, OPENAI_NO_IMAGES)) or "(no output)"
            held += msg.images if images else []
            if msg.is_error and not content.lower().startswith(("error", "denied", "not run", "no result")):
                content = f"error: {content}"
            out.append({"role": "tool", "tool_call_id": safe_tool_id(msg.tool_call_id), "content": content})
        elif msg.role == "assistant":
            # "" rather than null: some servers refuse a null content, some chat templates need a string
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": safe_tool_id(c.id, i),
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                    }
                    for i, c in enumerate(msg.tool_calls)
                ]
            elif not msg.content:
                continue
            out.append(entry)
        elif msg.images and images:
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": msg.content or "(empty message)"},
                        *map(_openai_image, msg.images),
                    ],
                }
            )
        else:
            out.append({"role": "user", "content": images_note(msg, OPENAI_NO_IMAGES)})
    if held:
        out.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES}, *map(_openai_image, held)]})
    return out


def openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` of a chat-completions call."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]
