"""Stored events into OpenTelemetry metrics and log events (the names follow Claude Code's, with ``monkey.``).

The :class:`Observer` sees every event of a session's one pump once it is stored, sub-agents' included
(their events carry their own session id), and keeps only what it needs between events: each session's
backend and model, the running turn's start and the time a person took during it, and, with
``OTEL_LOG_TOOL_DETAILS=1``, each call's arguments until its result.

Every string that leaves goes through :func:`monkey.process.redact` first, with the rules that keep
credentials from the children monkey starts: a credential in an argument, a prompt or an error never
reaches a collector. The workspace is sent as a hash unless ``OTEL_LOG_WORKSPACE_PATH=1``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import monkey
from monkey import events as ev
from monkey.process import REDACTED, is_secret, redact, secret_values

__all__ = ["API_KINDS", "Observer", "Sink", "changed_lines", "workspace_hash"]


class Sink(Protocol):
    """Where the observer's figures go (:class:`monkey.telemetry.export.Exporting`)."""

    def add(self, name: str, value: float, attributes: dict[str, Any]) -> None: ...

    def log(self, name: str, attributes: dict[str, Any], ts: float) -> None: ...


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def workspace_hash(path: str) -> str:
    """The workspace as it is sent by default: 16 hex digits of its path's SHA-256."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def changed_lines(diff: str) -> tuple[int, int]:
    """Lines added and removed in a unified diff (its ``+++`` / ``---`` headers left out)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


API_KINDS = frozenset(
    "authentication permission rate_limit quota_exceeded overloaded server_error model_not_found invalid_request"
    " context_too_long network invalid_response".split()
)
"""Error kinds that come from a model call (see monkey.backends.errors)."""
_DECISIONS = {"user": "person", "session": "person", "rule": "rule", "policy": "mode"}
"""An ``approval_resolved`` stored before ``source`` was: what its ``by`` says."""


class Observer:
    """Turns one session's stored events into metrics and log events on ``sink`` (None: records nothing)."""

    def __init__(self, sink: Sink | None, env: Mapping[str, str]) -> None:
        self.exporting = sink
        self.prompts = _flag(env, "OTEL_LOG_USER_PROMPTS")
        self.details = _flag(env, "OTEL_LOG_TOOL_DETAILS")
        self.paths = _flag(env, "OTEL_LOG_WORKSPACE_PATH")
        self.secrets = secret_values(env)
        self._sessions: dict[str, dict[str, Any]] = {}
        """Each session's common attributes (session.id, workspace.hash, monkey.version, backend)."""
        self._models: dict[str, str] = {}
        self._children: set[str] = set()
        self._turn_started: dict[str, float] = {}
        self._waited = 0.0
        self._arguments: dict[str, dict[str, Any]] = {}
        self._cleaned: dict[str, str] = {}
        """Model names as redacted (a usage event each model call, a handful of names in a session)."""
        self._handlers: dict[str, Callable[[Any], None]] = {
            "session_started": self._session_started,
            "subagent_started": self._subagent_started,
            "backend_changed": self._backend_changed,
            "turn_started": self._turn_start,
            "turn_completed": self._turn_completed,
            "usage": self._usage,
            "error": self._error,
            "retry": self._retry,
            "approval_resolved": self._approval,
            "tool_call": self._tool_call,
            "tool_result": self._tool_result,
        }

    def observe(self, event: ev.Event) -> None:
        """Record ``event`` (most types record nothing)."""
        handler = self._handlers.get(event.type)
        if handler is not None and self.exporting is not None:
            handler(event)

    # -- attributes -------------------------------------------------------------------------

    def _clean(self, value: str) -> str:
        return redact(value, self.secrets)

    def _common(self, sid: str) -> dict[str, Any]:
        found = self._sessions.get(sid)
        if found is None:
            found = self._sessions[sid] = {"session.id": sid, "monkey.version": monkey.__version__}
        return found

    def _model(self, sid: str, model: str = "") -> str:
        model = model or self._models.get(sid, "")
        cleaned = self._cleaned.get(model)
        if cleaned is None:
            if len(self._cleaned) >= 256:  # names that keep changing: the cache stays small
                self._cleaned.clear()
            cleaned = self._cleaned[model] = self._clean(model)
        return cleaned

    def _arguments_text(self, arguments: dict[str, Any]) -> str:
        def clean(value: Any, key: str = "") -> Any:
            if isinstance(value, str):
                return REDACTED if key and is_secret(key, "") else self._clean(value)  # by its name, or in part
            if isinstance(value, dict):
                return {k: clean(v, str(k)) for k, v in value.items()}
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value

        return json.dumps(clean(arguments), ensure_ascii=False, default=str)

    # -- events -----------------------------------------------------------------------------

    def _session_started(self, event: ev.SessionStarted) -> None:
        sid = event.session_id
        common = {
            "session.id": sid,
            "workspace.hash": workspace_hash(event.workspace),
            "monkey.version": monkey.__version__,
            "backend": self._clean(event.backend),
        }
        if self.paths:
            common["workspace.path"] = self._clean(event.workspace)
        self._sessions[sid] = common
        self._models[sid] = event.model
        if sid not in self._children:
            self.exporting.add("monkey.session.count", 1, {**common, "resumed": event.resumed})  # type: ignore[union-attr]

    def _subagent_started(self, event: ev.SubagentStarted) -> None:
        self._children.add(event.child_session_id)

    def _backend_changed(self, event: ev.BackendChanged) -> None:
        sid = event.session_id
        self._sessions[sid] = {**self._common(sid), "backend": self._clean(event.to_backend)}
        self._models[sid] = event.to_model

    def _turn_start(self, event: ev.TurnStarted) -> None:
        sid = event.session_id
        if sid in self._children:  # the parent's model wrote it, not a person
            return
        self._turn_started[sid] = event.ts
        self._waited = 0.0
        attributes = {**self._common(sid), "prompt_length": len(event.prompt), "turn": event.turn}
        if self.prompts:
            attributes["prompt"] = self._clean(event.prompt)
        self.exporting.log("monkey.user_prompt", attributes, event.ts)  # type: ignore[union-attr]

    def _turn_completed(self, event: ev.TurnCompleted) -> None:
        started = self._turn_started.pop(event.session_id, None)
        if started is None:
            return
        worked = max(0.0, event.ts - started - self._waited)
        self.exporting.add(  # type: ignore[union-attr]
            "monkey.active_time.total",
            worked,
            {**self._common(event.session_id), "type": "cli"},
        )

    def _usage(self, event: ev.Usage) -> None:
        sink = self.exporting
        assert sink is not None
        sid = event.session_id
        model = self._model(sid, event.model)
        common = {**self._common(sid), "model": model}
        for kind, tokens in (
            ("input", event.input_tokens),
            ("output", event.output_tokens),
            ("cacheRead", event.cache_read_tokens),
            ("cacheCreation", event.cache_creation_tokens),
        ):
            if tokens:
                sink.add("monkey.token.usage", tokens, {**common, "type": kind})
        if event.cost_usd:
            sink.add("monkey.cost.usage", event.cost_usd, common)
        sink.log(
            "monkey.api_request",
            {
                **common,
                "input_tokens": event.input_tokens,
                "output_tokens": event.output_tokens,
                "cache_read_tokens": event.cache_read_tokens,
                "cache_creation_tokens": event.cache_creation_tokens,
                "cost_usd": event.cost_usd,
                "duration_ms": event.duration_ms,
                "ttft_ms": event.ttft_ms,
            },
            event.ts,
        )

    def _error(self, event: ev.Error) -> None:
        if event.kind not in API_KINDS:
            return
        sid = event.session_id
        self.exporting.log(  # type: ignore[union-attr]
            "monkey.api_error",
            {
                **self._common(sid),
                "model": self._model(sid),
                "error": self._clean(event.message),
                "kind": event.kind,
                "fatal": event.fatal,
            },
            event.ts,
        )

    def _retry(self, event: ev.Retry) -> None:
        sid = event.session_id
        self.exporting.log(  # type: ignore[union-attr]
            "monkey.api_error",
            {
                **self._common(sid),
                "model": self._model(sid),
                "error": self._clean(event.reason),
                "kind": "retry",
                "attempt": event.attempt,
                "fatal": False,
            },
            event.ts,
        )

    def _approval(self, event: ev.ApprovalResolved) -> None:
        sink = self.exporting
        assert sink is not None
        source = event.source or _DECISIONS.get(event.by, "rule")
        decision = "reject" if event.decision == "denied" else "accept"
        attributes = {**self._common(event.session_id), "tool": event.name, "decision": decision, "source": source}
        sink.add("monkey.tool.decision", 1, attributes)
        sink.log("monkey.tool_decision", {**attributes, "call_id": event.call_id, "scope": event.decision}, event.ts)

    def _tool_call(self, event: ev.ToolCallEvent) -> None:
        if self.details:
            self._arguments[event.call_id] = event.arguments

    def _tool_result(self, event: ev.ToolResult) -> None:
        sink = self.exporting
        assert sink is not None
        common = self._common(event.session_id)
        if event.wait_ms:
            self._waited += event.wait_ms / 1000
            sink.add("monkey.active_time.total", event.wait_ms / 1000, {**common, "type": "user"})
        if event.diff:
            added, removed = changed_lines(event.diff)
            if added:
                sink.add("monkey.lines_of_code.count", added, {**common, "type": "added"})
            if removed:
                sink.add("monkey.lines_of_code.count", removed, {**common, "type": "removed"})
        attributes = {
            **common,
            "tool": event.name,
            "call_id": event.call_id,
            "success": event.ok,
            "duration_ms": event.duration_ms,
            "wait_ms": event.wait_ms,
        }
        arguments = self._arguments.pop(event.call_id, None)
        if arguments is not None:
            attributes["tool_parameters"] = self._arguments_text(arguments)
        sink.log("monkey.tool_result", attributes, event.ts)
