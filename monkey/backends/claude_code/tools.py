"""Claude Code's tool calls in monkey's vocabulary, and its ``can_use_tool`` control protocol.

With ``--input-format stream-json --permission-prompt-tool stdio`` the CLI asks on stdout
before it runs a tool it has no permission for::

    {"type": "control_request", "request_id": "...",
     "request": {"subtype": "can_use_tool", "tool_name": "Write", "input": {...}, "tool_use_id": "..."}}

and waits for one line on stdin::

    {"type": "control_response", "response": {"subtype": "success", "request_id": "...",
     "response": {"behavior": "allow", "updatedInput": {...}}}}     (or "deny" with a "message")

A request monkey does not understand gets an ``error`` response (never silence: the CLI
would wait for ever).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monkey.backends.gate import GateAnswer, GateCall, workspace_relative
from monkey.event_base import ToolImage

__all__ = ["gate_call", "user_message", "permission_answer", "error_answer"]

_FILE_WRITES = {"Write": "file_write", "Edit": "file_edit", "MultiEdit": "file_edit", "NotebookEdit": "file_edit"}
_READS = {
    "Read": "file_read",
    "Grep": "grep_search",
    "Glob": "glob_search",
    "LS": "list_directory",
    "NotebookRead": "file_read",
}


def gate_call(request: dict[str, Any], workspace: Path) -> GateCall:
    """The ``can_use_tool`` request as a call in monkey's vocabulary."""
    name = str(request.get("tool_name") or "")
    raw = request.get("input")
    raw = raw if isinstance(raw, dict) else {}
    call_id = str(request.get("tool_use_id") or "")
    reason = str(request.get("decision_reason") or request.get("description") or "")
    if name == "Bash":
        return GateCall(call_id, name, "shell_execute", {"command": str(raw.get("command") or "")}, raw, reason)
    if name in _FILE_WRITES:
        path = workspace_relative(raw.get("file_path") or raw.get("notebook_path"), workspace)
        args: dict[str, Any] = {"path": path}
        if name == "Write":
            args["content"] = str(raw.get("content") or "")
        elif name == "Edit":
            args.update(
                old_string=str(raw.get("old_string") or ""),
                new_string=str(raw.get("new_string") or ""),
                replace_all=bool(raw.get("replace_all")),
            )
        return GateCall(call_id, name, _FILE_WRITES[name], args, raw, reason)
    if name in _READS:
        path = workspace_relative(raw.get("file_path") or raw.get("notebook_path") or raw.get("path") or ".", workspace)
        args = {"path": path}
        if raw.get("pattern") is not None:
            args["pattern"] = str(raw["pattern"])
        return GateCall(call_id, name, _READS[name], args, raw, reason)
    return GateCall(call_id, name, name or "unknown", dict(raw), raw, reason)


def user_message(prompt: str, images: Sequence[ToolImage] = ()) -> bytes:
    """The prompt as one stream-json user message line (its images as image blocks before the text)."""
    content: str | list[dict[str, Any]] = prompt
    if images:
        content = [
            *(
                {"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.data}}
                for i in images
            ),
            {"type": "text", "text": prompt},
        ]
    msg = {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    return json.dumps(msg).encode() + b"\n"


def permission_answer(request_id: str, answer: GateAnswer, raw: dict[str, Any]) -> bytes:
    """The ``control_response`` carrying monkey's decision."""
    if answer.allow:
        decision: dict[str, Any] = {"behavior": "allow", "updatedInput": raw}
    else:
        decision = {"behavior": "deny", "message": answer.message or "denied by monkey"}
        if answer.stop:
            decision["interrupt"] = True
    body = {"subtype": "success", "request_id": request_id, "response": decision}
    return json.dumps({"type": "control_response", "response": body}).encode() + b"\n"


def error_answer(request_id: str, message: str) -> bytes:
    """The ``control_response`` for a request monkey cannot answer."""
    body = {"subtype": "error", "request_id": request_id, "error": message}
    return json.dumps({"type": "control_response", "response": body}).encode() + b"\n"
