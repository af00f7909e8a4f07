"""Claude Code's ``--output-format stream-json`` output as monkey's typed events.

Feed the child's stdout bytes in any chunking to :meth:`ClaudeStreamParser.feed`; call
:meth:`ClaudeStreamParser.close` when the stream ends. What comes out:

- ``system``/``init`` → :class:`AgentSession` (session id, model, tools); ``api_retry`` →
  :class:`Retry`; ``compact_boundary`` → :class:`ContextCompacted`; other subtypes (status,
  hooks, tasks...) → :class:`Raw`.
- ``stream_event`` (``--include-partial-messages``) → :class:`TextDelta`,
  :class:`ThinkingDelta`, and one :class:`ToolCallEvent` per tool call once its
  ``input_json_delta`` pieces are complete. Block state is kept per ``parent_tool_use_id``
  and block index and reset at each ``message_start``.
- ``assistant`` lines → whatever the partial events did not already deliver (text and
  thinking of a message that was not streamed, tool calls not yet announced).
- ``user`` lines → :class:`ToolResult` for each ``tool_result`` block.
- ``control_request`` (``--permission-prompt-tool stdio``) → no event: kept in
  :attr:`ClaudeStreamParser.requests` for the backend to answer on stdin.
- ``result`` → :class:`Usage` (tokens, ``total_cost_usd``) and the final
  :class:`MessageCompleted` (no tool calls: Claude Code ran its own tools). An error
  result (an ``error_*`` subtype, or ``is_error`` even with subtype ``success``) sets
  :attr:`ClaudeStreamParser.error` instead.

Sub-agent traffic (a non-null ``parent_tool_use_id``) shows its tool calls and results;
its text is not mixed into the answer. Non-JSON lines, unknown types and lines whose
fields do not fit become :class:`Raw` events and are counted in :attr:`unknown`; the
parser never raises on any input.
"""

from __future__ import annotations

from typing import Any

import msgspec

from monkey.backends.jsonl import JsonlParser
from monkey.events import (
    AgentSession,
    ContextCompacted,
    Event,
    MessageCompleted,
    Raw,
    Retry,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResult,
    Usage,
)

__all__ = ["ClaudeStreamParser", "tool_result_text"]

SOURCE = "claude-code"
_decode = msgspec.json.Decoder().decode


class _Delta(msgspec.Struct):
    type: str
    text: str = ""
    thinking: str = ""
    partial_json: str = ""


class _StreamEvent(msgspec.Struct):
    type: str
    index: int = -1
    delta: _Delta | None = None


class _FastLine(msgspec.Struct):
    """The fields of the commonest line (a ``stream_event`` delta); others are skipped."""

    type: str = ""
    event: _StreamEvent | None = None
    parent_tool_use_id: str | None = None


_decode_fast = msgspec.json.Decoder(_FastLine).decode
_FAST_DONE = frozenset({"message_delta", "message_stop", "ping"})
_QUIET_SYSTEM = frozenset(
    {
        "status",
        "hook_started",
        "hook_response",
        "task_started",
        "task_progress",
        "task_notification",
        "files_persisted",
        "informational",
    }
)


def tool_result_text(content: Any) -> str:
    """The text of a ``tool_result`` block's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type"):
                    parts.append(f"[{block['type']}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


class _Block:
    __slots__ = ("kind", "id", "name", "parts")

    def __init__(self, kind: str, id: str = "", name: str = "") -> None:
        self.kind = kind
        self.id = id
        self.name = name
        self.parts: list[str] = []


class ClaudeStreamParser(JsonlParser):
    """Turns Claude Code's stream-json lines into events; never raises on bad input."""

    source = SOURCE

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[tuple[str, int], _Block] = {}
        """Open content blocks of the streamed message, by (parent_tool_use_id, index)."""
        self._streamed: set[str] = set()
        """Ids of messages whose text came as partial events."""
        self._announced: set[str] = set()
        """Tool call ids already given as a ToolCallEvent."""
        self._names: dict[str, str] = {}
        """Tool names by call id, for the results."""
        self._text: list[str] = []
        """Text of the latest main-thread assistant message (the answer if ``result`` has none)."""
        self._text_id = ""
        self.session_id = ""
        """Claude Code's own session id (from ``init``, else from ``result``)."""
        self.model = ""
        self.result: dict[str, Any] | None = None
        """The ``result`` object, once seen."""
        self.requests: list[dict[str, Any]] = []
        """``control_request`` lines not yet answered (the backend takes them after each feed)."""
        self.cancelled: set[str] = set()
        """Ids of requests the CLI withdrew (``control_cancel_request``): no answer is due."""

    def _incomplete(self) -> str:
        if self.result is None:
            return "Claude Code ended without a result: the run is incomplete"
        return ""

    def _line(self, line: bytes, out: list[Event]) -> None:
        if not line.strip():
            return
        self.lines += 1
        try:
            fast = _decode_fast(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass  # not this shape (or not JSON): the general path decides
        else:
            if fast.type == "stream_event" and fast.event is not None and self._fast(fast, out):
                return
        self._json_line(line, out)

    def _object(self, obj: dict[str, Any], out: list[Event]) -> bool:
        kind = obj.get("type")
        if kind == "stream_event":
            return self._stream_event(obj.get("event"), obj.get("parent_tool_use_id") or "", out)
        if kind == "assistant":
            return self._assistant(obj, out)
        if kind == "user":
            return self._user(obj, out)
        if kind == "system":
            return self._system(obj, out)
        if kind == "result":
            return self._result(obj, out)
        if kind == "control_request" and isinstance(obj.get("request"), dict):
            self.requests.append(obj)  # the backend answers it (permission prompts on stdio)
            return True
        if kind == "control_cancel_request":
            self.cancelled.add(str(obj.get("request_id") or ""))
            return True
        return False

    # -- line types ------------------------------------------------------------------

    def _system(self, obj: dict[str, Any], out: list[Event]) -> bool:
        sub = obj.get("subtype")
        if sub == "init":
            sid = obj.get("session_id")
            if not isinstance(sid, str):
                return False
            self.session_id = sid
            self.model = str(obj.get("model") or "")
            tools = obj.get("tools") or []
            out.append(
                AgentSession(
                    agent=SOURCE, agent_session_id=sid, model=self.model, tools=[t for t in tools if isinstance(t, str)]
                )
            )
            return True
        if sub == "api_retry":
            delay = obj.get("retry_delay_ms", 0) / 1000
            reason = obj.get("error") or obj.get("error_status") or "API error"
            out.append(Retry(attempt=int(obj.get("attempt", 0)), delay=float(delay), reason=f"Claude Code: {reason}"))
            return True
        if sub == "compact_boundary":
            meta = obj.get("compact_metadata") or {}
            trigger = meta.get("trigger")
            out.append(
                ContextCompacted(
                    tokens_before=int(meta.get("pre_tokens") or 0),
                    tokens_after=0,
                    messages_compacted=0,
                    summary="",
                    trigger=trigger if trigger in ("auto", "manual") else "auto",
                )
            )
            return True
        if sub in _QUIET_SYSTEM:
            out.append(Raw(source=SOURCE, data=obj))  # known, shown as is, not counted as unknown
            return True
        return False

    def _fast(self, line: _FastLine, out: list[Event]) -> bool:
        """A stream_event delta, stop or end decoded as structs; False: let the general path see it."""
        ev = line.event
        assert ev is not None
        kind = ev.type
        parent = line.parent_tool_use_id or ""
        if kind == "content_block_delta":
            delta = ev.delta
            if delta is None:
                return False
            dkind = delta.type
            if dkind == "text_delta":
                if not parent:
                    self._text.append(delta.text)
                    out.append(TextDelta(text=delta.text))
                return True
            if dkind == "input_json_delta":
                block = self._blocks.get((parent, ev.index))
                if block is None:
                    return False
                block.parts.append(delta.partial_json)
                return True
            if dkind == "thinking_delta":
                if not parent:
                    out.append(ThinkingDelta(text=delta.thinking))
                return True
            return False
        if kind == "content_block_stop" and ev.index >= 0:
            block = self._blocks.pop((parent, ev.index), None)
            if block is not None and block.id:
                self._announce(block.id, block.name, _arguments("".join(block.parts)), out)
            return True
        return kind in _FAST_DONE

    def _stream_event(self, ev: Any, parent: str, out: list[Event]) -> bool:
        kind = ev["type"]
        if kind == "content_block_delta":
            block = self._blocks.get((parent, ev["index"]))
            delta = ev["delta"]
            dkind = delta["type"]
            if dkind == "text_delta":
                if not isinstance(delta["text"], str):
                    return False
                if not parent:
                    text = delta["text"]
                    self._text.append(text)
                    out.append(TextDelta(text=text))
                return True
            if dkind == "input_json_delta":
                if block is None or not isinstance(delta["partial_json"], str):
                    return False
                block.parts.append(delta["partial_json"])
                return True
            if dkind == "thinking_delta":
                if not isinstance(delta["thinking"], str):
                    return False
                if not parent:
                    out.append(ThinkingDelta(text=delta["thinking"]))
                return True
            return dkind in ("signature_delta", "citations_delta")
        if kind == "content_block_start":
            cb = ev["content_block"]
            ckind = cb["type"]
            if ckind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                self._blocks[(parent, ev["index"])] = _Block(ckind, str(cb["id"]), str(cb["name"]))
            else:
                self._blocks[(parent, ev["index"])] = _Block(ckind)
            return True
        if kind == "content_block_stop":
            block = self._blocks.pop((parent, ev["index"]), None)
            if block is not None and block.id:
                self._announce(block.id, block.name, _arguments("".join(block.parts)), out)
            return True
        if kind == "message_start":
            for key in [k for k in self._blocks if k[0] == parent]:
                del self._blocks[key]
            mid = ev["message"].get("id")
            if isinstance(mid, str):
                self._streamed.add(mid)
                if not parent:
                    self._text, self._text_id = [], mid
            return True
        return kind in ("message_delta", "message_stop", "ping")

    def _announce(self, call_id: str, name: str, args: dict[str, Any], out: list[Event]) -> None:
        self._names[call_id] = name
        if call_id not in self._announced:
            self._announced.add(call_id)
            out.append(ToolCallEvent(call_id=call_id, name=name, arguments=args))

    def _assistant(self, obj: dict[str, Any], out: list[Event]) -> bool:
        msg = obj["message"]
        content = msg["content"]
        if not isinstance(content, list):
            return False
        mid = msg.get("id") or ""
        main = not obj.get("parent_tool_use_id")
        streamed = mid in self._streamed
        if main and mid != self._text_id:
            self._text, self._text_id = [], mid
        for block in content:
            bkind = block.get("type")
            if bkind == "text" and main and not streamed:
                self._text.append(block["text"])
                out.append(TextDelta(text=block["text"]))
            elif bkind == "thinking" and main and not streamed:
                out.append(ThinkingDelta(text=block["thinking"]))
            elif bkind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                args = block.get("input")
                self._announce(str(block["id"]), str(block["name"]), args if isinstance(args, dict) else {}, out)
        return True

    def _user(self, obj: dict[str, Any], out: list[Event]) -> bool:
        content = obj["message"]["content"]
        if isinstance(content, str):
            return True  # the prompt echoed back
        for block in content:
            if block.get("type") == "tool_result":
                call_id = str(block["tool_use_id"])
                out.append(
                    ToolResult(
                        call_id=call_id,
                        name=self._names.get(call_id, ""),
                        ok=not block.get("is_error"),
                        output=tool_result_text(block.get("content")),
                    )
                )
        return True

    def _result(self, obj: dict[str, Any], out: list[Event]) -> bool:
        sid = obj.get("session_id")
        if isinstance(sid, str) and sid:
            self.session_id = sid
        usage = obj.get("usage") or {}
        cost = obj.get("total_cost_usd") or 0.0
        out.append(
            Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                cache_creation_tokens=int(usage.get("cache_creation_input_tokens") or 0),
                cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
                cost_usd=float(cost),
                model=self.model,
            )
        )
        sub = str(obj.get("subtype") or "")
        text = obj.get("result")
        self.result = obj
        if obj.get("is_error") or (sub and sub != "success"):
            detail = text if isinstance(text, str) and text else ", ".join(map(str, obj.get("errors") or []))
            self.error = f"Claude Code failed ({sub or 'error'}): {detail or 'no details given'}"
            return True
        if not isinstance(text, str):
            text = "".join(self._text)
        out.append(MessageCompleted(text=text, stop_reason=str(obj.get("stop_reason") or "end_turn")))
        return True


def _arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        args = _decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return {"_raw": raw}
    return args if isinstance(args, dict) else {"_value": args}
