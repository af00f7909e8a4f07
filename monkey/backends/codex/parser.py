"""Codex's ``codex exec --json`` output as monkey's typed events.

- ``thread.started`` → :class:`AgentSession` (the thread id resumes the conversation).
- ``item.started|updated|completed`` by item type: ``agent_message`` → :class:`TextDelta`
  (the last one is the answer); ``reasoning`` → :class:`ThinkingDelta`;
  ``command_execution`` → a ``shell`` :class:`ToolCallEvent` when it starts and a
  :class:`ToolResult` when it completes; ``file_change`` → an ``apply_patch`` call and its
  result; ``mcp_tool_call`` → ``server.tool`` call and result; ``web_search`` → a call and
  its result; ``todo_list`` → a ``todo_list`` call each time the list changes; ``error``
  items → a non-fatal :class:`Error`.
- ``turn.completed`` → :class:`Usage` (its usage is cumulative over the thread, so the
  usage of earlier turns given to the constructor is subtracted) and the final
  :class:`MessageCompleted`; ``turn.failed`` sets :attr:`CodexStreamParser.error`; a
  top-level ``error`` is not terminal and becomes a non-fatal :class:`Error`. An API's JSON
  error body, which Codex passes on as the message, is shown by its ``error.message``.

Unknown types, unknown items and lines that do not fit become counted :class:`Raw`
events. A stream without ``turn.completed`` or ``turn.failed`` is an incomplete end.
"""

from __future__ import annotations

from typing import Any

import msgspec

from monkey.backends.jsonl import JsonlParser
from monkey.events import (
    AgentSession,
    Error,
    Event,
    MessageCompleted,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResult,
    Usage,
)

__all__ = ["CodexStreamParser"]

SOURCE = "codex"
_decode = msgspec.json.Decoder().decode


def _message(text: Any) -> str:
    """An error message; Codex passes an API's JSON error body on as is, so its
    ``error.message`` is taken out of it when there is one."""
    text = str(text)
    if text.startswith("{"):
        try:
            body = _decode(text)
            inner = body["error"]["message"] if isinstance(body.get("error"), dict) else body.get("message")
        except (msgspec.DecodeError, AttributeError, KeyError, TypeError):
            return text
        if isinstance(inner, str) and inner:
            return inner
    return text


class CodexStreamParser(JsonlParser):
    """Turns Codex's ``exec --json`` lines into events; never raises on bad input."""

    source = SOURCE

    def __init__(self, *, previous_usage: tuple[int, int, int] = (0, 0, 0)) -> None:
        super().__init__()
        self._announced: set[str] = set()
        self._shown: dict[str, int] = {}
        """How much of each streaming message/reasoning item was already given, by item id."""
        self._todo: dict[str, Any] = {}
        self.previous_usage = previous_usage
        """(input, cached input, output) tokens reported by earlier turns of the thread."""
        self.usage = previous_usage
        self.thread_id = ""
        self.answer = ""
        self.finished = False

    def _incomplete(self) -> str:
        return "" if self.finished else "Codex ended without turn.completed: the turn is incomplete"

    def _line(self, line: bytes, out: list[Event]) -> None:
        if not line.strip():
            return
        self.lines += 1
        try:
            obj = _decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError):
            self._raw(line.decode("utf-8", "replace"), out)
            return
        got: list[Event] = []
        try:
            handled = isinstance(obj, dict) and self._object(obj, got)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            handled = False
        if handled:
            out.extend(got)
        else:
            self._raw(obj, out)

    def _object(self, obj: dict[str, Any], out: list[Event]) -> bool:
        kind = obj.get("type")
        if isinstance(kind, str) and kind.startswith("item."):
            return self._item(kind[5:], obj["item"], out)
        if kind == "thread.started":
            tid = obj["thread_id"]
            if not isinstance(tid, str):
                return False
            self.thread_id = tid
            out.append(AgentSession(agent=SOURCE, agent_session_id=tid))
            return True
        if kind == "turn.started":
            return True
        if kind == "turn.completed":
            u = obj.get("usage") or {}
            now = (int(u.get("input_tokens") or 0), int(u.get("cached_input_tokens") or 0),
                   int(u.get("output_tokens") or 0))
            prev = self.previous_usage
            # cumulative over the thread; a count smaller than before means it restarted
            inp, cached, outp = (n - p if n >= p else n for n, p in zip(now, prev))
            self.usage = now
            self.finished = True
            out.append(Usage(input_tokens=max(inp - cached, 0), cache_read_tokens=cached, output_tokens=outp))
            out.append(MessageCompleted(text=self.answer))
            return True
        if kind == "turn.failed":
            err = obj.get("error") or {}
            msg = err.get("message") if isinstance(err, dict) else str(err)
            self.error = f"Codex failed: {_message(msg) if msg else 'no details given'}"
            return True
        if kind == "error":
            out.append(Error(message=f"Codex: {_message(obj['message'])}", kind="agent"))
            return True
        return False

    def _item(self, phase: str, item: dict[str, Any], out: list[Event]) -> bool:
        if phase not in ("started", "updated", "completed"):
            return False
        iid = str(item["id"])
        kind = item.get("type") or item.get("item_type")
        done = phase == "completed"
        if kind in ("agent_message", "assistant_message", "reasoning"):
            text = item.get("text") or ""
            if not isinstance(text, str):
                return False
            seen = self._shown.get(iid, 0)
            new = text[seen:] if text.startswith(text[:seen]) else text
            if new:
                self._shown[iid] = len(text)
                out.append(ThinkingDelta(text=new) if kind == "reasoning" else TextDelta(text=new))
            if kind != "reasoning" and done:
                self.answer = text
            return True
        if kind == "command_execution":
            self._call(iid, "shell", {"command": item["command"]}, out)
            if done or item.get("status") in ("completed", "failed", "declined"):
                code = item.get("exit_code")
                ok = item.get("status") != "failed" and (code is None or code == 0)
                output = str(item.get("aggregated_output") or "")
                if code not in (None, 0):
                    output += f"\n[exit code {code}]"
                self._result(iid, "shell", ok, output, out)
            return True
        if kind == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            self._call(iid, "apply_patch", {"changes": changes}, out)
            if done:
                summary = "\n".join(f"{c.get('kind', 'update')} {c.get('path', '?')}" for c in changes)
                self._result(iid, "apply_patch", item.get("status") != "failed", summary, out)
            return True
        if kind == "mcp_tool_call":
            name = f"{item.get('server', '')}.{item.get('tool', '')}"
            args = item.get("arguments")
            self._call(iid, name, args if isinstance(args, dict) else {}, out)
            if done:
                err = item.get("error")
                res = item.get("result")
                text = (err.get("message", "") if isinstance(err, dict) else str(err)) if err else \
                    msgspec.json.encode(res).decode() if res is not None else ""
                self._result(iid, name, not err and item.get("status") != "failed", text, out)
            return True
        if kind == "web_search":
            self._call(iid, "web_search", {"query": str(item.get("query", ""))}, out)
            if done:
                self._result(iid, "web_search", True, "", out)
            return True
        if kind == "todo_list":
            items = item["items"]
            if self._todo.get(iid) != items:
                self._todo[iid] = items
                out.append(ToolCallEvent(call_id=iid, name="todo_list", arguments={"items": items}))
            return True
        if kind == "error":
            out.append(Error(message=f"Codex: {item['message']}", kind="agent"))
            return True
        return False

    def _call(self, iid: str, name: str, args: dict[str, Any], out: list[Event]) -> None:
        if iid not in self._announced:
            self._announced.add(iid)
            out.append(ToolCallEvent(call_id=iid, name=name, arguments=args))

    def _result(self, iid: str, name: str, ok: bool, output: str, out: list[Event]) -> None:
        key = iid + "\0result"
        if key not in self._announced:
            self._announced.add(key)
            out.append(ToolResult(call_id=iid, name=name, ok=ok, output=output))
