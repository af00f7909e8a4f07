"""Context policies: named steps that shape what the model is sent, never what is stored.

Before each model call the context manager runs the configured stack (``[context] policies``,
in order) over the conversation. Each step is a pure function of the messages and its
settings: it returns the messages to send and the tool calls (by id) whose nodes it changed.
The agent's own list and the session store keep every node whole, so ``memory_read`` can
still give a changed node back, and a resumed session sends exactly the same request.

Steps that edit old nodes move their boundary in whole steps (``step`` nodes), not one node
per call:
between two moves every request starts with the same bytes as the one before, so a provider's
prompt cache (Anthropic's ``cache_control`` prefix) is reused; it is paid again only when the
boundary moves.

- ``compress_failed_attempts``: a tool call that failed and was retried later (the same tool
  called again afterwards) becomes one line: the error's first line.
- ``summarize_subagent_chatter``: a finished ``task`` call (a sub-agent) older than the last
  one is represented by its handoff: the labelled lines (agent, completed, turns, cost,
  files changed, key outputs) and the start of the child's answer.
- ``drop_completed_tool_calls``: only the newest ``keep`` tool interactions (and at most
  ``max_tokens`` of their output) are sent in full; older results become a one-line summary
  and their long arguments a length.

``elide_tool_results`` and ``compact`` are the context manager's own threshold steps
(see :mod:`monkey.context.window`); they can be placed in the stack by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from monkey.events import ToolCallSpec
from monkey.messages import Message

__all__ = ["POLICIES", "DEFAULT_STACK", "PolicySettings", "Applied", "apply_policy", "memory_key",
           "HANDOFF_SUMMARY"]

DEFAULT_STACK = ("compress_failed_attempts", "summarize_subagent_chatter", "drop_completed_tool_calls",
                 "elide_tool_results", "compact")
"""The default order: cheap one-line edits first, then the threshold steps, compaction last."""
POLICIES = frozenset(DEFAULT_STACK)
"""Every step the stack may name."""

HANDOFF_SUMMARY = "\nsummary:\n"
"""Where a ``task`` result's labelled handoff lines end and the child's answer begins
(see :func:`monkey.agent.subagents.handoff_text`)."""
SUMMARY_CHARS = 400
"""How much of an older child's answer ``summarize_subagent_chatter`` sends."""

Count = Callable[[Message], int]


@dataclass
class PolicySettings:
    """The settings of the editing steps (``[context.policy]``)."""

    keep: int = 8
    """``drop_completed_tool_calls``: the newest tool interactions always sent in full."""
    max_tokens: int = 20_000
    """``drop_completed_tool_calls``: at most this many tokens of tool output sent in full (the
    newest interaction always is, whatever its size)."""
    step: int = 4
    """How many nodes an editing step's boundary moves at once (keeps the prompt-cache prefix);
    until it moves, up to ``step - 1`` more than ``keep`` (or ``max_tokens``) are sent whole."""
    arg_chars: int = 300
    """String arguments of a dropped call longer than this are sent as their length."""


@dataclass
class Applied:
    """What one step did to one request."""

    messages: list[Message]
    edited: list[str] = field(default_factory=list)
    """Call ids whose nodes the step changed, oldest first."""


def memory_key(call_id: str) -> str:
    """The ``memory_read`` key that gives back a call's whole result."""
    return f"call:{call_id}"


def _first_line(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _tool_indices(messages: list[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "tool" and m.tool_call_id]


def _answered_last(messages: list[Message]) -> set[int]:
    """Tool results after the last assistant message: the model has not seen them yet."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return {i for i in _tool_indices(messages) if i > last}


def _replace(messages: list[Message], index: int, content: str) -> bool:
    m = messages[index]
    if len(content) >= len(m.content):
        return False
    messages[index] = Message(role="tool", tool_call_id=m.tool_call_id, name=m.name, content=content,
                              is_error=m.is_error)
    return True


def compress_failed_attempts(messages: list[Message], settings: PolicySettings, count: Count) -> Applied:
    """Failed calls of a tool that was called again later, as one line each."""
    out = list(messages)
    calls_after: dict[int, set[str]] = {}
    seen: set[str] = set()
    for i in range(len(out) - 1, -1, -1):
        calls_after[i] = set(seen)
        if out[i].role == "assistant":
            seen.update(c.name for c in out[i].tool_calls)
    edited = []
    for i in _tool_indices(out):
        m = out[i]
        if m.is_error and m.name in calls_after[i]:
            line = f"[failed attempt, retried later] {_first_line(m.content)}"
            if _replace(out, i, line):
                edited.append(m.tool_call_id)
    return Applied(out, edited)


def summarize_subagent_chatter(messages: list[Message], settings: PolicySettings, count: Count) -> Applied:
    """Finished sub-agent calls, but the newest, as their handoff's labelled lines and the
    start of the child's answer (the child's own session keeps the rest)."""
    out = list(messages)
    tasks = [i for i in _tool_indices(out) if out[i].name == "task" and not out[i].is_error]
    edited = []
    for i in tasks[:-1]:
        m = out[i]
        head, sep, answer = m.content.partition(HANDOFF_SUMMARY)
        if not sep or len(answer) <= SUMMARY_CHARS:
            continue
        cut = answer[:SUMMARY_CHARS].rsplit(" ", 1)[0]
        short = (f"{head}{sep}{cut} […] (the answer's {len(answer)} characters: "
                 f"memory_read key={memory_key(m.tool_call_id)!r})")
        if _replace(out, i, short):
            edited.append(m.tool_call_id)
    return Applied(out, edited)


def _short_arguments(call: ToolCallSpec, limit: int) -> ToolCallSpec:
    args = {k: (f"[{len(v)} characters, dropped from context]" if isinstance(v, str) and len(v) > limit else v)
            for k, v in call.arguments.items()}
    return call if args == call.arguments else ToolCallSpec(id=call.id, name=call.name, arguments=args)


def drop_completed_tool_calls(messages: list[Message], settings: PolicySettings, count: Count) -> Applied:
    """All but the newest tool interactions as one-line summaries, the boundary moving in steps."""
    out = list(messages)
    tools = _tool_indices(out)
    unseen = _answered_last(out)
    n = len(tools)
    need = max(0, n - max(1, settings.keep))
    tail = 0
    for k in range(n - 1, -1, -1):  # the oldest index still inside max_tokens, newest first
        tail += count(out[tools[k]])
        if tail > settings.max_tokens and k < n - 1:
            need = max(need, k + 1)
            break
    if not need:
        return Applied(out)
    step = max(1, settings.step)
    cut = need // step * step  # whole steps only: up to step - 1 more stay whole until the next move
    cut = min(cut, n - 1, min((k for k, i in enumerate(tools) if i in unseen), default=n))
    if not cut:
        return Applied(out)
    dropped = {out[i].tool_call_id for i in tools[:cut]}
    edited = []
    for i in tools[:cut]:
        m = out[i]
        state = "failed" if m.is_error else "ok"
        lines = m.content.count("\n") + 1 if m.content else 0
        line = (f"[{m.name} {state}: {_first_line(m.content, 120)!r} ({lines} lines, {count(m)} tokens) — "
                f"dropped from context; memory_read key={memory_key(m.tool_call_id)!r} gives it back]")
        if _replace(out, i, line):
            edited.append(m.tool_call_id)
    for i, m in enumerate(out):
        if m.role == "assistant" and any(c.id in dropped for c in m.tool_calls):
            calls = [_short_arguments(c, settings.arg_chars) if c.id in dropped else c for c in m.tool_calls]
            if calls != m.tool_calls:
                out[i] = Message(role="assistant", content=m.content, tool_calls=calls, thinking=m.thinking,
                                 thinking_signature=m.thinking_signature)
    return Applied(out, edited)


_STEPS: dict[str, Callable[[list[Message], PolicySettings, Count], Applied]] = {
    "compress_failed_attempts": compress_failed_attempts,
    "summarize_subagent_chatter": summarize_subagent_chatter,
    "drop_completed_tool_calls": drop_completed_tool_calls,
}


def apply_policy(name: str, messages: list[Message], settings: PolicySettings, count: Count) -> Applied:
    """Run the editing step ``name`` (one of :data:`POLICIES` but the context manager's own)."""
    return _STEPS[name](messages, settings, count)
