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

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from monkey.events import ToolCallSpec
from monkey.messages import Message

__all__ = ["POLICIES", "DEFAULT_STACK", "PolicySettings", "Applied", "apply_policy", "memory_key", "HANDOFF_SUMMARY"]

DEFAULT_STACK = (
    "compress_failed_attempts",
    "summarize_subagent_chatter",
    "drop_completed_tool_calls",
    "elide_tool_results",
    "compact",
)
"""The default order: cheap one-line edits first, then the threshold steps, compaction last."""
POLICIES = frozenset(DEFAULT_STACK)
"""Every step the stack may name."""

HANDOFF_SUMMARY = "\nsummary:\n"
"""Where a ``task`` result's labelled handoff lines end and the child's answer begins
(see :func:`monkey.agent.subagents.handoff_text`)."""
SUMMARY_CHARS = 400
"""How much of an older child's answer ``summarize_subagent_chatter`` sends."""

Count = Callable[[Message], int]
Memo = dict[tuple[object, ...], Any]
"""What a step made of a message before, by the message's identity (and what else decided it):
a long conversation's old nodes are edited once, not again at every request."""
_MEMO_MAX = 50_000


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


def _grown(memo: Memo | None, key: tuple[object, ...], messages: list[Message]) -> tuple[int, Any]:
    """Where a scan of ``messages`` may start, and what the scan of the same messages up to there
    found last time (0 and None: from the start). The prefix is compared in C (the same objects)."""
    last = memo.get(key) if memo is not None else None
    if last is not None:
        k = len(last[0])
        if len(messages) >= k and messages[:k] == last[0]:
            return k, last[1]
    return 0, None


def _tool_indices(messages: list[Message], memo: Memo | None = None) -> list[int]:
    start, found = _grown(memo, ("tools",), messages)
    tools = list(found or ())
    tools += [i for i in range(start, len(messages)) if messages[i].role == "tool" and messages[i].tool_call_id]
    if memo is not None:
        memo[("tools",)] = (list(messages), tools)
    return tools


def _replace(messages: list[Message], index: int, content: str) -> bool:
    m = messages[index]
    if len(content) >= len(m.content):
        return False
    messages[index] = Message(
        role="tool", tool_call_id=m.tool_call_id, name=m.name, content=content, is_error=m.is_error
    )
    return True


def _remembered(memo: Memo | None, key: tuple[object, ...], m: Message, make: Callable[[], Message]) -> Message:
    """``make()``, or what it made for this very message (and ``key``) before."""
    if memo is None:
        return make()
    full = (*key, id(m))
    hit = memo.get(full)
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(memo) > _MEMO_MAX:
        memo.clear()
    new = make()
    memo[full] = (m, new)
    return new


def _edit(out: list[Message], index: int, memo: Memo | None, step: str, content: Callable[[Message], str]) -> bool:
    """Replace the tool result at ``index`` by a shorter one made of it (remembered); whether it changed."""
    m = out[index]

    def make() -> Message:
        one = [m]
        _replace(one, 0, content(m))
        return one[0]

    new = _remembered(memo, (step,), m, make)
    if new is m:
        return False
    out[index] = new
    return True


def compress_failed_attempts(
    messages: list[Message], settings: PolicySettings, count: Count, memo: Memo | None = None
) -> Applied:
    """Failed calls of a tool that was called again later, as one line each.

    With ``memo``, the messages up to the last request's end are not looked at again while they
    are the same objects: only the new ones, and the failures not yet retried."""
    out = list(messages)
    start, found = _grown(memo, ("failed",), messages)
    if found:
        last_call, waiting, done, made = dict(found[0]), list(found[1]), found[2], list(found[3])
        out[:start] = done
    else:
        last_call, waiting, made = {}, [], []
    # last_call: each tool's latest call (the index of the assistant message that made it);
    # waiting: failed results not retried (yet); made: (index, call id) of the ones made a line
    for i in range(start, len(out)):
        m = out[i]
        if m.role == "assistant":
            for c in m.tool_calls:
                last_call[c.name] = i
        elif m.role == "tool" and m.tool_call_id and m.is_error:
            waiting.append(i)
    still = []
    for i in waiting:
        m = out[i]
        if last_call.get(m.name, -1) > i and _edit(
            out, i, memo, "failed", lambda m: f"[failed attempt, retried later] {_first_line(m.content)}"
        ):
            made.append((i, m.tool_call_id))
        elif last_call.get(m.name, -1) <= i:
            still.append(i)
    made.sort()
    if memo is not None:
        memo[("failed",)] = (list(messages), (dict(last_call), still, list(out), list(made)))
    return Applied(out, [call_id for _, call_id in made])


def summarize_subagent_chatter(
    messages: list[Message], settings: PolicySettings, count: Count, memo: Memo | None = None
) -> Applied:
    """Finished sub-agent calls, but the newest, as their handoff's labelled lines and the
    start of the child's answer (the child's own session keeps the rest)."""
    out = list(messages)
    tasks = [i for i in _tool_indices(out, memo) if out[i].name == "task" and not out[i].is_error]
    edited = []
    for i in tasks[:-1]:
        m = out[i]
        head, sep, answer = m.content.partition(HANDOFF_SUMMARY)
        if not sep or len(answer) <= SUMMARY_CHARS:
            continue
        cut = answer[:SUMMARY_CHARS].rsplit(" ", 1)[0]
        short = (
            f"{head}{sep}{cut} […] (the answer's {len(answer)} characters: "
            f"memory_read key={memory_key(m.tool_call_id)!r})"
        )
        if _replace(out, i, short):
            edited.append(m.tool_call_id)
    return Applied(out, edited)


def _short_arguments(call: ToolCallSpec, limit: int) -> ToolCallSpec:
    args = {
        k: (f"[{len(v)} characters, dropped from context]" if isinstance(v, str) and len(v) > limit else v)
        for k, v in call.arguments.items()
    }
    return call if args == call.arguments else ToolCallSpec(id=call.id, name=call.name, arguments=args)


def _running_tokens(messages: list[Message], tools: list[int], count: Count, memo: Memo | None) -> list[int]:
    """``[0, t0, t0 + t1, ...]``: the tokens of the tool results before each one, and of all."""
    start, found = _grown(memo, ("tool-tokens",), messages)
    cum = list(found) if found else [0]
    first = bisect.bisect_left(tools, start) if found else 0
    cum = cum[: first + 1]
    for i in tools[first:]:
        cum.append(cum[-1] + count(messages[i]))
    if memo is not None:
        memo[("tool-tokens",)] = (list(messages), cum)
    return cum


def drop_completed_tool_calls(
    messages: list[Message], settings: PolicySettings, count: Count, memo: Memo | None = None
) -> Applied:
    """All but the newest tool interactions as one-line summaries, the boundary moving in steps.

    With ``memo``, what was done up to the last request's boundary is kept while the messages up
    to there are the same objects: a request costs the results newly dropped, not the history."""
    out = list(messages)
    tools = _tool_indices(out, memo)
    n = len(tools)
    need = max(0, n - max(1, settings.keep))
    cum = _running_tokens(out, tools, count, memo)  # cum[k]: tokens of the results before tools[k]
    k = min(bisect.bisect_left(cum, cum[n] - settings.max_tokens) - 1, n - 2)
    if k >= 0:  # the newest results past max_tokens (the newest one always whole) stay; older ones go
        need = max(need, k + 1)
    if not need:
        return Applied(out)
    step = max(1, settings.step)
    cut = need // step * step  # whole steps only: up to step - 1 more stay whole until the next move
    last_assistant = next((i for i in range(len(out) - 1, -1, -1) if out[i].role == "assistant"), -1)
    cut = min(cut, n - 1, bisect.bisect_right(tools, last_assistant))  # never a result the model has not seen
    if not cut:
        return Applied(out)
    end = tools[cut - 1] + 1  # every change lies before: the dropped results and the calls that asked for them
    key = ("dropped-prefix", settings.arg_chars)
    last = memo.get(key) if memo is not None else None
    done, edited = 0, []
    if last is not None and last[0] <= cut and len(last[1]) <= end and messages[: len(last[1])] == last[1]:
        out[: len(last[1])] = last[2]  # the same messages up to the last boundary (compared in C): the same edits
        done, edited = last[0], list(last[3])

    def summary(m: Message) -> str:
        state = "failed" if m.is_error else "ok"
        lines = m.content.count("\n") + 1 if m.content else 0
        return (
            f"[{m.name} {state}: {_first_line(m.content, 120)!r} ({lines} lines, {count(m)} tokens) — "
            f"dropped from context; memory_read key={memory_key(m.tool_call_id)!r} gives it back]"
        )

    askers: set[int] = set()
    for i in tools[done:cut]:
        m = out[i]
        if _edit(out, i, memo, "dropped", summary):
            edited.append(m.tool_call_id)
        a = i - 1
        while a >= 0 and messages[a].role == "tool":
            a -= 1
        if a >= 0 and messages[a].role == "assistant":
            askers.add(a)  # the message whose calls these results answer
    for a in sorted(askers):
        m = messages[a]
        gone = set()
        j = a + 1
        while j < end and messages[j].role == "tool":
            gone.add(messages[j].tool_call_id)
            j += 1
        ids = tuple(c.id for c in m.tool_calls if c.id in gone)
        if not ids:
            continue

        def shorter(m: Message = m, gone: set[str] = gone) -> Message:
            calls = [_short_arguments(c, settings.arg_chars) if c.id in gone else c for c in m.tool_calls]
            if calls == m.tool_calls:
                return m
            return Message(
                role="assistant",
                content=m.content,
                tool_calls=calls,
                thinking=m.thinking,
                thinking_signature=m.thinking_signature,
            )

        out[a] = _remembered(memo, ("arguments", ids, settings.arg_chars), m, shorter)
    if memo is not None:
        memo[key] = (cut, messages[:end], out[:end], list(edited))
    return Applied(out, edited)


_STEPS: dict[str, Callable[[list[Message], PolicySettings, Count, Memo | None], Applied]] = {
    "compress_failed_attempts": compress_failed_attempts,
    "summarize_subagent_chatter": summarize_subagent_chatter,
    "drop_completed_tool_calls": drop_completed_tool_calls,
}


def apply_policy(
    name: str, messages: list[Message], settings: PolicySettings, count: Count, memo: Memo | None = None
) -> Applied:
    """Run the editing step ``name`` (one of :data:`POLICIES` but the context manager's own).
    ``memo`` (kept by the caller across requests) remembers what the step made of each message,
    so a message edited once is not edited again at every request."""
    return _STEPS[name](messages, settings, count, memo)
