"""The context window: counting what a request takes, the context policies, compacting.

Before each model call the loop asks :meth:`ContextManager.prepare` for the messages to
send. It counts the request (cached per message) and runs the policy stack in order
(``ContextSettings.policies``): the editing steps of :mod:`monkey.context.policies`
(failed attempts, sub-agents' transcripts, old tool calls), then ``elide_tool_results``:
past ``elide_at`` of the window old completed tool results (all but the last
``keep_tool_results``) go as a one-line placeholder; and ``compact``: past ``compact_at``
the same backend summarises the older messages (prompt in ``prompts/compact.md``), the
summary replaces them in the agent's list and the last ones stay verbatim. The original
messages stay in the session store, out of context (a compacted tool result stays
readable with ``memory_read``, from :attr:`ContextManager.archive`). Every call reports a
``context_usage`` event; a step that changes nodes it had not changed before a
``context_edited`` event; a compaction a ``context_compacted`` event.

Every step but ``compact`` is a pure function of the messages and the settings, so a
resumed session sends the same request the original process would have sent.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from monkey.context.policies import DEFAULT_STACK, Memo, PolicySettings, apply_policy
from monkey.prompts import load_prompt
from monkey.context.tokens import TokenCounter, counter_for, message_tokens, window_for
from monkey.backends.base import Backend, BackendError
from monkey.events import ContextCompacted, ContextEdited, ContextUsage, Error, Event, MessageCompleted, Usage
from monkey.messages import Message, ModelRequest, ToolSpec

__all__ = ["AgentState", "ContextSettings", "ContextManager", "SUMMARY_HEADER", "render_transcript"]

Emit = Callable[[Event], None]


class _Limits(Protocol):
    @property
    def max_tokens(self) -> int:
        """The most tokens a model's answer may take."""
        ...


class AgentState(Protocol):
    """What the context manager reads and changes of the agent it serves.

    :class:`monkey.agent.loop.Agent` is one; it is named here by what is used, so that this
    module does not import the loop that imports it.
    """

    session_id: str
    system_prompt: str
    messages: list[Message]
    """The conversation as sent to the model; a compaction replaces its older part in place."""

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tool definitions sent with every request (counted as the base of each request)."""
        ...

    @property
    def options(self) -> _Limits:
        """The loop's settings; only ``max_tokens`` is read (the summary's length)."""
        ...

    async def pre_compact(self, trigger: str, emit: Emit) -> None:
        """Called before a compaction (the ``PreCompact`` hooks)."""
        ...

    async def post_compact(self, emit: Emit) -> str:
        """Called after a compaction (``SessionStart`` hooks, source ``compact``): context to add to the summary."""
        ...


def _common(a: list[Message], b: list[Message], c: list[Message], d: list[Message]) -> int:
    """The length of the longest prefix ``a`` shares with ``b`` while ``c`` shares it with ``d``
    (the same objects, compared in C, a binary search of slices)."""
    hi = min(len(a), len(b), len(c), len(d))
    if a[:hi] == b[:hi] and c[:hi] == d[:hi]:
        return hi
    lo, hi = 0, hi - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid] and c[:mid] == d[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written when the context was compacted; "
    "{n} earlier messages are not shown]\n\n"
)
_TRANSCRIPT_TOOL_CHARS = 2_000


@dataclass
class ContextSettings:
    """How the context window is managed."""

    window: int = 0
    """The model's window in tokens; 0 asks the backend (or its model name); unknown turns
    automatic eliding and compaction off (``/compact`` still works)."""
    compact_at: float = 0.8
    """Compact when a request would take this fraction of the window."""
    elide_at: float = 0.6
    """Elide old tool results past this fraction (never above ``compact_at``)."""
    keep_tool_results: int = 3
    """The most recent tool results always sent in full."""
    keep_fraction: float = 0.3
    """The newest messages kept verbatim by a compaction take at most this fraction of the window."""
    policies: tuple[str, ...] = DEFAULT_STACK
    """The steps run before each model call, in order (see :mod:`monkey.context.policies`)."""
    policy: PolicySettings = field(default_factory=PolicySettings)
    """The editing steps' settings."""


def _cut_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def render_transcript(messages: list[Message], summaries: set[str]) -> str:
    """The messages as a readable transcript for the summariser."""
    parts = []
    for m in messages:
        if m.role == "user":
            title = "Earlier summary" if m.content in summaries else "User"
            parts.append(f"## {title}\n{m.content}")
        elif m.role == "assistant":
            lines = [f"## Assistant\n{m.content}" if m.content else "## Assistant"]
            for call in m.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False)
                lines.append(f"-> {call.name} {_cut_text(args, 500)}")
            parts.append("\n".join(lines))
        else:
            state = "failed" if m.is_error else "ok"
            parts.append(f"## Result of {m.name} ({state})\n{_cut_text(m.content, _TRANSCRIPT_TOOL_CHARS)}")
    return "\n\n".join(parts)


class ContextManager:
    """Counts, elides and compacts the conversation of one agent."""

    def __init__(
        self, backend: Backend, *, settings: ContextSettings | None = None, counter: TokenCounter | None = None
    ) -> None:
        self.backend = backend
        self.settings = settings if settings is not None else ContextSettings()
        self.counter = counter if counter is not None else counter_for(backend)
        self.window = window_for(backend, self.settings.window)
        """The context window in tokens (0: unknown)."""
        self.summaries: set[str] = set()
        """Texts of the summary messages made (or restored) so far."""
        self._cache: dict[int, tuple[Message, int]] = {}
        self._base: tuple[int, int, int] = (0, 0, 0)
        self.last: ContextUsage | None = None
        """The latest measurement (what the status bar shows)."""
        self.edited: dict[str, str] = {}
        """Call id to the step that changed its node in the latest request."""
        self.archive: dict[str, Message] = {}
        """Tool results compacted out of the agent's list, by call id (restored on resume)."""
        self._seen: dict[str, set[str]] = {}
        self._interned: dict[tuple[str, int], tuple[Message, Message]] = {}
        self._memo: Memo = {}
        self._summed: tuple[list[Message], int] = ([], 0)
        self._last_intern: dict[str, tuple[list[Message], list[Message], list[Message], list[int], list[int]]] = {}
        """Each step's last request: what it was given, made, made of it, and where it changed
        what (with the tokens it added up to each change)."""
        """What the editing steps made of each message (see :func:`~monkey.context.policies.apply_policy`)."""

    # -- counting ----------------------------------------------------------------------

    def tokens(self, message: Message) -> int:
        """Tokens of one message (cached for the message object)."""
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = message_tokens(self.counter, message)
        if len(self._cache) > 50_000:
            self._cache.clear()
        self._cache[id(message)] = (message, n)
        return n

    def base_tokens(self, agent: AgentState) -> int:
        """Tokens of the system prompt and the tool definitions."""
        key = (id(agent.system_prompt), id(agent.tool_specs))
        if self._base[:2] != key:
            specs: list[Any] = [
                {"name": s.name, "description": s.description, "parameters": s.parameters} for s in agent.tool_specs
            ]
            n = self.counter.count_tokens(agent.system_prompt) + self.counter.count_tokens(json.dumps(specs))
            self._base = (*key, n)
        return self._base[2]

    def _intern(self, step: str, before: list[Message], after: list[Message]) -> tuple[list[Message], int]:
        """``after`` with each changed message replaced by the object made for it last time, when
        equal (so its token count is cached and the request's bytes are the same), and how many
        tokens the changes added (negative: saved). What this step's last request had in common
        with this one (the same objects, found by comparing in C) is not looked at again."""
        out = list(after)
        start, changed, cum = 0, [], [0]
        last = self._last_intern.get(step)
        if last is not None:
            start = _common(before, last[0], after, last[1])
            out[:start] = last[2][:start]
            kept = bisect.bisect_left(last[3], start)
            changed, cum = last[3][:kept], last[4][: kept + 1]
        for i in [
            i for i, (old, new) in enumerate(zip(before[start:], after[start:], strict=True), start) if new is not old
        ]:
            old, new = before[i], after[i]
            key = (step, id(old))
            hit = self._interned.get(key)
            if hit is not None and hit[0] is old and (hit[1] is new or hit[1] == new):
                new = out[i] = hit[1]
            else:
                if len(self._interned) > 50_000:
                    self._interned.clear()
                self._interned[key] = (old, new)
            changed.append(i)
            cum.append(cum[-1] + self.tokens(new) - self.tokens(old))
        self._last_intern[step] = (before, after, out, changed, cum)
        return out, cum[-1]

    def _total(self, messages: list[Message]) -> int:
        """Tokens of ``messages``; a list that only grew since the last one costs its new messages."""
        prev, total = self._summed
        n = len(prev)
        if n and len(messages) >= n and messages[:n] == prev:  # identical objects: compared in C
            total += sum(self.tokens(m) for m in messages[n:])
        else:
            total = sum(self.tokens(m) for m in messages)
        self._summed = (messages, total)
        return total

    def _elide(self, messages: list[Message], used: int) -> tuple[list[Message], list[str]]:
        elide_at = min(self.settings.elide_at, self.settings.compact_at)
        if not self.window or used < elide_at * self.window:
            return messages, []
        out = list(messages)
        tools = [i for i, m in enumerate(out) if m.role == "tool"]
        edited = []
        for i in tools[: max(0, len(tools) - self.settings.keep_tool_results)]:
            m = out[i]
            if m.tool_call_id in self.edited:
                continue  # an earlier step made it a line already
            n = self.tokens(m)
            placeholder = f"[output of {m.name} elided to save context ({n} tokens); run the call again if you need it]"
            short = Message(
                role="tool", tool_call_id=m.tool_call_id, name=m.name, content=placeholder, is_error=m.is_error
            )
            if self.tokens(short) < n:
                out[i] = short
                edited.append(m.tool_call_id)
        return out, edited

    def _wire(self, agent: AgentState, emit: Emit | None = None) -> tuple[list[Message], int, int]:
        """The messages to send after every step but compaction, their tokens, and how many
        results the elision step changed."""
        messages = list(agent.messages)
        base = self.base_tokens(agent)
        used = base + self._total(messages)
        self.edited = {}
        elided = 0
        for step in self.settings.policies:
            if step == "compact":
                continue
            before = used
            if step == "elide_tool_results":
                after, edited = self._elide(messages, used)
                elided = len(edited)
            else:
                applied = apply_policy(step, messages, self.settings.policy, self.tokens, self._memo)
                after, edited = applied.messages, applied.edited
            if edited:
                messages, delta = self._intern(step, messages, after)
                used += delta
                self.edited.update(dict.fromkeys(edited, step))
            self._report(agent, step, edited, before, used, emit)
        return messages, used, elided

    def _report(
        self, agent: AgentState, step: str, edited: list[str], before: int, after: int, emit: Emit | None
    ) -> None:
        """A ``context_edited`` event when ``step`` changed nodes it had not changed before."""
        seen = self._seen.get(step, set())
        new = [c for c in edited if c not in seen]
        self._seen[step] = set(edited)
        if new and emit is not None:
            emit(
                ContextEdited(
                    session_id=agent.session_id,
                    policy=step,
                    nodes=len(edited),
                    new=len(new),
                    call_ids=new[:100],
                    tokens_before=before,
                    tokens_after=after,
                )
            )

    # -- the loop's hook ---------------------------------------------------------------

    async def prepare(self, agent: AgentState, emit: Emit) -> list[Message]:
        """The messages to send now, after the policy stack; compacts first when past the threshold."""
        messages, used, elided = self._wire(agent, emit)
        compact = self.window and "compact" in self.settings.policies and used >= self.settings.compact_at * self.window
        if compact and await self.compact(agent, emit, trigger="auto") is not None:
            messages, used, elided = self._wire(agent, emit)
        if self.window:
            self.last = ContextUsage(
                session_id=agent.session_id,
                used=used,
                window=self.window,
                fraction=round(used / self.window, 4),
                elided=elided,
                edited=len(self.edited),
            )
            emit(self.last)
        return messages

    # -- compaction --------------------------------------------------------------------

    def _cut(self, messages: list[Message], manual: bool = False, base: int = 0) -> int:
        """How many leading messages to summarise (0: nothing worth it).

        The newest messages stay verbatim: at most ``keep_fraction`` of the room the window
        leaves beside the system prompt and tools (``base``) for an automatic compaction,
        about the last 30% of the conversation for a manual one.
        """
        candidates = [i for i in range(1, len(messages)) if messages[i].role != "tool"]
        if not candidates:
            return 0
        total = sum(self.tokens(m) for m in messages)
        budget = self.settings.keep_fraction * max(0, self.window - base) if self.window and not manual else 0.3 * total
        tail = 0
        cut = candidates[-1]
        pos = len(messages)
        for i in reversed(candidates):
            tail += sum(self.tokens(m) for m in messages[i:pos])
            pos = i
            if tail > budget:
                break
            cut = i
        return cut if cut >= 2 else 0

    async def compact(self, agent: AgentState, emit: Emit, *, trigger: str = "manual") -> ContextCompacted | None:
        """Summarise the older messages into one; ``None`` when there is too little to compact
        or the summary failed (then an ``error`` event says why)."""
        messages = list(agent.messages)
        cut = self._cut(messages, manual=trigger == "manual", base=self.base_tokens(agent))
        if not cut:
            return None
        await agent.pre_compact("manual" if trigger == "manual" else "auto", emit)
        head = messages[:cut]
        head_tokens = sum(self.tokens(m) for m in head)
        before = self.base_tokens(agent) + sum(self.tokens(m) for m in messages)
        request = ModelRequest(
            system=load_prompt("compact").strip(),
            messages=[Message(role="user", content=render_transcript(head, self.summaries))],
            tools=[],
            session_id=agent.session_id,
            max_tokens=max(64, min(agent.options.max_tokens, head_tokens // 2)),
        )
        text = ""
        try:
            stream = self.backend.stream(request)
            try:
                async for event in stream:
                    if isinstance(event, MessageCompleted):
                        text = event.text
                    elif isinstance(event, Usage):
                        emit(event)
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        except BackendError as exc:
            emit(
                Error(
                    session_id=agent.session_id,
                    kind="compaction",
                    message=f"could not compact the conversation: {exc.message}",
                )
            )
            return None
        if not text.strip():
            emit(
                Error(
                    session_id=agent.session_id,
                    kind="compaction",
                    message="could not compact the conversation: the model wrote an empty summary",
                )
            )
            return None
        content = SUMMARY_HEADER.format(n=cut) + text.strip()
        limit = head_tokens // 2
        summary = Message(role="user", content=content)
        if self.tokens(summary) > limit:
            keep = max(0, int(len(content) * limit / self.tokens(summary)) - 40)
            summary = Message(role="user", content=content[:keep] + "\n[summary cut to fit]")
        again = await agent.post_compact(emit)  # e.g. instructions the summary must not lose
        if again:
            summary = Message(role="user", content=f"{summary.content}\n\n{again}")
        self.summaries.add(summary.content)
        self.archive.update((m.tool_call_id, m) for m in head if m.role == "tool" and m.tool_call_id)
        agent.messages[:] = [summary, *messages[cut:]]
        after = self.base_tokens(agent) + sum(self.tokens(m) for m in agent.messages)
        event = ContextCompacted(
            session_id=agent.session_id,
            tokens_before=before,
            tokens_after=after,
            messages_compacted=cut,
            summary=summary.content,
            trigger="manual" if trigger == "manual" else "auto",
        )
        emit(event)
        return event
