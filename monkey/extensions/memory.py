"""Working memory: notes the model keeps for itself, apart from what it is sent.

``memory_write {key, value}`` stores a note under a key (an empty value removes it);
``memory_read {key?}`` gives one back, or lists the keys and the tool calls the context
policies changed or compaction took out of the context (``call:ID`` gives such a call's
whole result back, from the agent's list or the compaction archive). Neither changes a file,
so neither asks; both are tool calls like any other, decided by the permission engine and
stored with the session, which is how the notes survive ``--continue`` and compaction:
:func:`memory_from_events` rebuilds them from the stored calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

import msgspec

from monkey.messages import Message
from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome, load_description

__all__ = ["WorkingMemory", "MemoryWrite", "MemoryRead", "memory_from_events", "MAX_KEYS", "MAX_VALUE"]

MAX_KEYS = 500
MAX_KEY = 200
MAX_VALUE = 20_000
_CALL = "call:"


@dataclass
class WorkingMemory:
    """A session's notes, in the order they were first written."""

    entries: dict[str, str] = field(default_factory=dict)

    def write(self, key: str, value: str) -> str:
        """Store (or, with an empty value, remove) a note; the line the model is told."""
        key = key.strip()
        if not key or len(key) > MAX_KEY:
            raise ToolError(f"a key is 1 to {MAX_KEY} characters")
        if key.startswith(_CALL):
            raise ToolError(f"keys starting {_CALL!r} are the results of tool calls; choose another key")
        if len(value) > MAX_VALUE:
            raise ToolError(f"a value is at most {MAX_VALUE} characters (this one has {len(value)}); keep the gist")
        if not value:
            if self.entries.pop(key, None) is None:
                raise ToolError(f"no note under {key!r}")
            return f"removed {key!r}"
        if key not in self.entries and len(self.entries) >= MAX_KEYS:
            raise ToolError(f"the memory holds at most {MAX_KEYS} notes; remove one (an empty value) first")
        new = key not in self.entries
        self.entries[key] = value
        return f"{'stored' if new else 'replaced'} {key!r} ({len(value)} characters)"


class WriteArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of memory_write."""

    key: Annotated[str, msgspec.Meta(description="A short name for the note, e.g. 'plan' or 'failing-tests'.")]
    value: Annotated[str, msgspec.Meta(description="The note; an empty string removes the key.")]


class ReadArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of memory_read."""

    key: Annotated[
        str,
        msgspec.Meta(
            description="The note to read, or call:ID for a tool call's whole result; omit it to list everything."
        ),
    ] = ""


class MemoryWrite(Tool[WriteArgs]):
    """Stores a note in the session's working memory."""

    name = "memory_write"
    Args = WriteArgs

    def __init__(self, memory: WorkingMemory) -> None:
        self.memory = memory

    @property
    def description(self) -> str:
        return load_description(__package__ or "monkey.agent", self.name)

    async def run(self, args: WriteArgs, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(output=self.memory.write(args.key, args.value))


def _line(text: str, limit: int = 100) -> str:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first if len(first) <= limit else first[: limit - 1] + "…"


class MemoryRead(Tool[ReadArgs]):
    """Reads the working memory, or a tool call's result the context no longer holds."""

    name = "memory_read"
    Args = ReadArgs

    def __init__(
        self, memory: WorkingMemory, *, find: Callable[[str], Message | None], edited: Callable[[], dict[str, str]]
    ) -> None:
        self.memory = memory
        self.find = find
        """A tool call's result by call id (the agent's list, then the compaction archive)."""
        self.edited = edited
        """Call id to the context step that changed (or compaction that removed) its node."""

    @property
    def description(self) -> str:
        return load_description(__package__ or "monkey.agent", self.name)

    async def run(self, args: ReadArgs, ctx: ToolContext) -> ToolOutcome:
        key = args.key.strip()
        if key.startswith(_CALL):
            found = self.find(key[len(_CALL) :])
            if found is None:
                raise ToolError(f"no tool call {key[len(_CALL) :]!r} in this session")
            text = found.content
            if len(text) > ctx.read_limit:
                text = text[: ctx.read_limit] + f"\n[... {len(found.content) - ctx.read_limit} more characters]"
            return ToolOutcome(output=f"{found.name} ({'failed' if found.is_error else 'ok'}):\n{text}")
        if key:
            if key not in self.memory.entries:
                known = ", ".join(repr(k) for k in self.memory.entries) or "none"
                raise ToolError(f"no note under {key!r}; the keys are: {known}")
            return ToolOutcome(output=self.memory.entries[key])
        lines = [f"{len(self.memory.entries)} note(s):" if self.memory.entries else "no notes yet"]
        lines += [f"- {k}: {_line(v)}" for k, v in self.memory.entries.items()]
        edited = self.edited()
        if edited:
            shown = list(edited.items())[-50:]
            lines.append(f"{len(edited)} tool call(s) shortened or out of the context (read one with key call:ID):")
            for call_id, step in shown:
                found = self.find(call_id)
                what = (
                    f"{found.name} {'failed' if found.is_error else 'ok'}: {_line(found.content, 80)}"
                    if found is not None
                    else "?"
                )
                lines.append(f"- call:{call_id} [{step}] {what}")
        return ToolOutcome(output="\n".join(lines))


def memory_from_events(lines: list[bytes]) -> WorkingMemory:
    """A stored session's notes: its ``memory_write`` calls that succeeded, replayed in order."""
    from monkey.events import DecodeError, ToolCallEvent, ToolResult, decode

    memory = WorkingMemory()
    calls: dict[str, tuple[str, str]] = {}
    for line in lines:
        if b"memory_write" not in line:
            continue
        try:
            event = decode(line)
        except DecodeError:
            continue
        if isinstance(event, ToolCallEvent) and event.name == "memory_write":
            key, value = event.arguments.get("key"), event.arguments.get("value")
            if isinstance(key, str) and isinstance(value, str):
                calls[event.call_id] = (key, value)
        elif isinstance(event, ToolResult) and event.name == "memory_write" and event.ok and event.call_id in calls:
            try:
                memory.write(*calls.pop(event.call_id))
            except ToolError:
                pass
    return memory
