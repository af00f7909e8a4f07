"""What ``codex app-server`` prints, as monkey's typed events (see :mod:`monkey.backends.codex.rpc`).

- the response to ``thread/start`` / ``thread/resume`` → :class:`AgentSession` (the thread id
  resumes the conversation next turn); an error response to any request fails the run;
- ``item/agentMessage/delta`` → :class:`TextDelta`, ``item/reasoning/summaryTextDelta`` and
  ``item/reasoning/textDelta`` → :class:`ThinkingDelta` (a completed item gives what the
  deltas did not; the last agent message is the answer);
- ``item/started|completed`` by item type:
  ``commandExecution`` → a ``shell`` :class:`ToolCallEvent` and its :class:`ToolResult`
  (``declined`` is a failed result), ``fileChange`` → ``apply_patch``, ``mcpToolCall`` →
  ``server.tool``, ``webSearch``, ``dynamicToolCall``; ``plan`` → a ``todo_list`` call;
- ``thread/tokenUsage/updated`` of this turn → :class:`Usage` of that model call (its ``last``
  part; Codex reports no cost; a resumed thread first tells its earlier turn's usage again,
  which is passed over);
- ``error`` and ``warning`` notifications → a non-fatal :class:`Error`;
- ``turn/completed`` → the final :class:`MessageCompleted`, or :attr:`error` when the turn
  failed or was interrupted.

Requests Codex makes of monkey (approvals) are kept in :attr:`CodexAppParser.requests` for
the backend to answer. Known notifications that tell monkey nothing are passed over;
anything else becomes a counted :class:`Raw` event. A stream without ``turn/completed`` is
an incomplete end.
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

__all__ = ["CodexAppParser", "THREAD_REQUEST", "TURN_REQUEST", "INIT_REQUEST"]

SOURCE = "codex"
INIT_REQUEST, THREAD_REQUEST, TURN_REQUEST = 1, 2, 3
"""The ids of monkey's requests in one run: initialize, thread/start|resume, turn/start."""
_NAMES = {INIT_REQUEST: "initialize", THREAD_REQUEST: "the thread", TURN_REQUEST: "turn/start"}
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


_QUIET = frozenset(
    "thread/started thread/status/changed thread/readState/changed thread/settings/updated thread/name/updated"
    " thread/environment/connected thread/environment/disconnected thread/closed thread/compacted"
    " turn/diff/updated turn/plan/updated serverRequest/resolved account/rateLimits/updated account/updated"
    " remoteControl/status/changed mcpServer/startupStatus/updated item/reasoning/summaryPartAdded"
    " item/commandExecution/outputDelta item/commandExecution/terminalInteraction item/fileChange/outputDelta"
    " item/fileChange/patchUpdated item/mcpToolCall/progress item/plan/delta hook/started hook/completed"
    " skills/changed model/rerouted model/verification item/autoApprovalReview/started"
    " item/autoApprovalReview/completed turn/moderationMetadata model/safetyBuffering/updated thread/goal/updated"
    " thread/goal/cleared thread/queue/changed thread/prediction/updated thread/project/updated project/changed"
    " app/list/updated".split()
)
"""Notifications that carry nothing monkey shows (status, diffs already in items, account state)."""


class CodexAppParser(JsonlParser):
    """Turns ``codex app-server`` lines into events; never raises on bad input."""

    source = SOURCE

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        """Codex's requests of monkey (approvals), in order, not yet answered."""
        self.items: dict[str, dict[str, Any]] = {}
        """The latest form of each item by id (a file change's paths for its approval request)."""
        self._announced: set[str] = set()
        self._shown: dict[str, int] = {}
        """Characters of each message/reasoning item already given as deltas, by item id."""
        self._plans: dict[str, str] = {}
        self.thread_id = ""
        self.model = ""
        """The model Codex runs the thread with (from its answer to thread/start or thread/resume)."""
        self.turn_id = ""
        self.turn_sent = False
        """The backend sent ``turn/start`` (once the thread was there)."""
        self.turn_started = False
        """``turn/start`` was answered: the turn runs."""
        self.answer = ""
        self.finished = False
        """``turn/completed`` came (whatever its status): nothing more will come."""

    def _incomplete(self) -> str:
        return "" if self.finished else "Codex ended without turn/completed: the turn is incomplete"

    def _line(self, line: bytes, out: list[Event]) -> None:
        if not line.strip():
            return
        self.lines += 1
        self._json_line(line, out)

    def _object(self, obj: dict[str, Any], out: list[Event]) -> bool:
        method = obj.get("method")
        if "id" in obj and isinstance(method, str):
            self.requests.append(obj)  # the backend answers it
            return True
        if "id" in obj and ("result" in obj or "error" in obj):
            return self._response(obj, out)
        if not isinstance(method, str):
            return False
        params = obj.get("params")
        params = params if isinstance(params, dict) else {}
        if method in _QUIET:
            return True
        if method in ("item/started", "item/completed"):
            return self._item(method == "item/completed", params["item"], out)
        if method == "item/agentMessage/delta":
            return self._delta(params, TextDelta, out)
        if method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            return self._delta(params, ThinkingDelta, out)
        if method == "thread/tokenUsage/updated":
            if not self.turn_id or params.get("turnId") != self.turn_id:
                return True  # a resumed thread's earlier turn, told again before this one starts
            last = params["tokenUsage"]["last"]
            cached = int(last.get("cachedInputTokens") or 0)
            out.append(
                Usage(
                    input_tokens=max(int(last.get("inputTokens") or 0) - cached, 0),
                    cache_read_tokens=cached,
                    output_tokens=int(last.get("outputTokens") or 0),
                    model=self.model,
                )
            )
            return True
        if method == "turn/started":
            self.turn_id = str(params["turn"]["id"])
            return True
        if method == "turn/completed":
            return self._completed(params["turn"], out)
        if method == "error":
            err = params.get("error") or {}
            text = _message(err.get("message", "") if isinstance(err, dict) else err)
            retry = " (Codex tries again)" if params.get("willRetry") else ""
            out.append(Error(message=f"Codex: {text}{retry}", kind="agent"))
            return True
        if method in ("warning", "configWarning", "deprecationNotice", "guardianWarning"):
            text = params.get("message") or params.get("summary") or ""
            out.append(Error(message=f"Codex: {text}", kind="agent"))
            return True
        return False

    def _response(self, obj: dict[str, Any], out: list[Event]) -> bool:
        rid = obj["id"]
        if rid not in _NAMES:
            return False
        err = obj.get("error")
        if err is not None:
            text = err.get("message") if isinstance(err, dict) else str(err)
            self.error = f"Codex refused {_NAMES[rid]}: {text or 'no details given'}"
            self.finished = True  # nothing more comes for this turn
            return True
        result = obj["result"]
        if rid == THREAD_REQUEST:
            tid = result["thread"]["id"]
            if not isinstance(tid, str):
                return False
            self.thread_id = tid
            model = result.get("model") or result["thread"].get("model")
            self.model = model if isinstance(model, str) else ""
            out.append(AgentSession(agent=SOURCE, agent_session_id=tid, model=self.model))
        elif rid == TURN_REQUEST:
            self.turn_started = True
            turn = result.get("turn") if isinstance(result, dict) else None
            if isinstance(turn, dict) and turn.get("id"):
                self.turn_id = str(turn["id"])
        return True

    def _completed(self, turn: dict[str, Any], out: list[Event]) -> bool:
        status = turn.get("status")
        self.finished = True
        if status == "completed":
            out.append(MessageCompleted(text=self.answer))
            return True
        err = turn.get("error")
        text = _message(err.get("message", "")) if isinstance(err, dict) and err.get("message") else ""
        if status == "interrupted":
            self.error = "Codex's turn was interrupted" + (f": {text}" if text else "")
        else:
            self.error = f"Codex failed: {text or 'no details given'}"
        return True

    def _delta(self, params: dict[str, Any], kind: type[TextDelta] | type[ThinkingDelta], out: list[Event]) -> bool:
        delta = params["delta"]
        if not isinstance(delta, str):
            return False
        if delta:
            iid = str(params["itemId"])
            self._shown[iid] = self._shown.get(iid, 0) + len(delta)
            out.append(kind(text=delta))
        return True

    def _item(self, done: bool, item: dict[str, Any], out: list[Event]) -> bool:
        iid = str(item["id"])
        kind = item["type"]
        self.items[iid] = item
        if kind in (
            "userMessage",
            "hookPrompt",
            "contextCompaction",
            "sleep",
            "enteredReviewMode",
            "exitedReviewMode",
            "subAgentActivity",
            "functionCallOutput",
        ):
            return True
        if kind == "agentMessage":
            text = item.get("text") or ""
            if not isinstance(text, str):
                return False
            if done:
                self._rest(iid, text, TextDelta, out)
                self.answer = text
            return True
        if kind == "reasoning":
            if done:
                parts = [p for p in (item.get("summary") or item.get("content") or []) if isinstance(p, str)]
                self._rest(iid, "\n\n".join(parts), ThinkingDelta, out)
            return True
        if kind == "commandExecution":
            self._call(iid, "shell", {"command": str(item["command"])}, out)
            status = item.get("status")
            if done or status in ("completed", "failed", "declined"):
                code = item.get("exitCode")
                ok = status == "completed" and (code is None or code == 0)
                output = str(item.get("aggregatedOutput") or "")
                if status == "declined":
                    output = output or "declined: the command did not run"
                elif code not in (None, 0):
                    output += f"\n[exit code {code}]"
                self._result(iid, "shell", ok, output, out)
            return True
        if kind == "fileChange":
            changes = [self._change(c) for c in item.get("changes") or [] if isinstance(c, dict)]
            self._call(iid, "apply_patch", {"changes": changes}, out)
            status = item.get("status")
            if done or status in ("completed", "failed", "declined"):
                summary = "\n".join(f"{c['kind']} {c['path']}" for c in changes)
                if status == "declined":
                    summary = "declined: the change was not made\n" + summary
                self._result(iid, "apply_patch", status == "completed", summary, out)
            return True
        if kind in ("mcpToolCall", "dynamicToolCall"):
            name = f"{item.get('server') or item.get('namespace') or ''}.{item.get('tool', '')}"
            args = item.get("arguments")
            self._call(iid, name, args if isinstance(args, dict) else {}, out)
            if done:
                err = item.get("error")
                res = item.get("result") if kind == "mcpToolCall" else item.get("contentItems")
                text = (
                    (err.get("message", "") if isinstance(err, dict) else str(err))
                    if err
                    else msgspec.json.encode(res).decode()
                    if res is not None
                    else ""
                )
                ok = not err and item.get("status") not in ("failed", "declined") and item.get("success") is not False
                self._result(iid, name, ok, text, out)
            return True
        if kind == "webSearch":
            self._call(iid, "web_search", {"query": str(item.get("query") or "")}, out)
            if done:
                self._result(iid, "web_search", True, "", out)
            return True
        if kind == "plan":
            text = str(item.get("text") or "")
            if text and self._plans.get(iid) != text:
                self._plans[iid] = text
                out.append(ToolCallEvent(call_id=iid, name="todo_list", arguments={"plan": text}))
            return True
        return False

    @staticmethod
    def _change(change: dict[str, Any]) -> dict[str, Any]:
        kind = change.get("kind")
        shown = {
            "kind": str(kind.get("type") if isinstance(kind, dict) else kind or "update"),
            "path": str(change.get("path") or "?"),
        }
        if isinstance(kind, dict) and kind.get("move_path"):
            shown["move_path"] = str(kind["move_path"])
        if change.get("diff"):
            shown["diff"] = str(change["diff"])
        return shown

    def _rest(self, iid: str, text: str, kind: type[TextDelta] | type[ThinkingDelta], out: list[Event]) -> None:
        seen = self._shown.get(iid, 0)
        if len(text) > seen:
            self._shown[iid] = len(text)
            out.append(kind(text=text[seen:]))

    def _call(self, iid: str, name: str, args: dict[str, Any], out: list[Event]) -> None:
        if iid not in self._announced:
            self._announced.add(iid)
            out.append(ToolCallEvent(call_id=iid, name=name, arguments=args))

    def _result(self, iid: str, name: str, ok: bool, output: str, out: list[Event]) -> None:
        key = iid + "\0result"
        if key not in self._announced:
            self._announced.add(key)
            out.append(ToolResult(call_id=iid, name=name, ok=ok, output=output))
