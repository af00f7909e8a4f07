"""Codex's ``app-server`` JSON-RPC protocol: what monkey sends, and its approval requests as gate calls.

``codex app-server`` speaks JSON-RPC 2.0 over stdio, one object per line (without the
``"jsonrpc"`` member in what it prints). A turn, as monkey runs it (checked with Codex 0.169)::

    → {"id": 1, "method": "initialize", "params": {"clientInfo": {...}}}
    → {"method": "initialized"}
    → {"id": 2, "method": "thread/start", "params": {"cwd": ..., "approvalPolicy": "untrusted", "sandbox": ...}}
      (or "thread/resume" with the "threadId" of an earlier turn)
    ← {"id": 2, "result": {"thread": {"id": "..."}}}
    → {"id": 3, "method": "turn/start", "params": {"threadId": "...", "input": [{"type": "text", "text": ...}]}}
    ← notifications: item/started, item/agentMessage/delta, item/completed, thread/tokenUsage/updated, ...
    ← {"id": 0, "method": "item/commandExecution/requestApproval", "params": {"itemId": ..., "command": ...}}
    → {"id": 0, "result": {"decision": "accept" | "decline" | "cancel"}}
    ← {"method": "turn/completed", "params": {"turn": {"status": "completed" | "failed" | "interrupted", ...}}}

With ``approvalPolicy: "untrusted"`` Codex asks before every command and every file change
it makes. ``item/fileChange/requestApproval`` names only the item: the paths and diffs come
in the ``item/started`` notification of that item, before the request. ``decline`` lets the
agent go on without the call; ``cancel`` also interrupts the turn. Every request gets an
answer (a request monkey does not know gets a JSON-RPC error), or the turn waits for ever.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from monkey.backends.gate import GateAnswer, GateCall, workspace_relative

__all__ = [
    "APPROVAL_POLICY",
    "COMMAND_APPROVAL",
    "FILE_APPROVAL",
    "answer",
    "command_call",
    "error_answer",
    "file_calls",
    "message",
    "notification",
    "unwrap_shell",
]

APPROVAL_POLICY = "untrusted"
"""Codex asks before every command and file change; monkey's engine answers."""
COMMAND_APPROVAL = "item/commandExecution/requestApproval"
FILE_APPROVAL = "item/fileChange/requestApproval"
_SHELLS = {"bash", "sh", "zsh", "dash"}


def message(rid: int, method: str, params: dict[str, Any]) -> bytes:
    """One request line."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"


def notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    """One notification line."""
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return json.dumps(obj).encode() + b"\n"


def answer(rid: Any, gate: GateAnswer) -> bytes:
    """The response to an approval request carrying monkey's decision."""
    decision = "accept" if gate.allow else "cancel" if gate.stop else "decline"
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"decision": decision}}).encode() + b"\n"


def error_answer(rid: Any, text: str) -> bytes:
    """The JSON-RPC error for a request monkey does not answer (it must not wait for ever)."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": text}}).encode() + b"\n"


def unwrap_shell(command: str) -> str:
    """The script of ``/bin/bash -lc 'SCRIPT'`` (how Codex runs its commands), else ``command``."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and os.path.basename(argv[0]) in _SHELLS and argv[1] in ("-c", "-lc", "-cl"):
        return argv[2]
    return command


def command_call(params: dict[str, Any], workspace: Path) -> GateCall:
    """An ``item/commandExecution/requestApproval`` as a ``shell_execute`` call.

    The script inside Codex's ``bash -lc`` wrapper is what monkey's rules judge; a command
    run in another folder than the workspace says so with a leading ``cd``.
    """
    raw = {k: v for k, v in params.items() if k in ("command", "cwd", "reason", "commandActions")}
    command = unwrap_shell(str(params.get("command") or ""))
    cwd = str(params.get("cwd") or "")
    if cwd and Path(os.path.normpath(cwd)) != workspace:
        command = f"cd {shlex.quote(workspace_relative(cwd, workspace))} && {command}"
    return GateCall(
        str(params.get("itemId") or ""),
        "commandExecution",
        "shell_execute",
        {"command": command},
        raw,
        str(params.get("reason") or ""),
    )


def file_calls(params: dict[str, Any], item: dict[str, Any] | None, workspace: Path) -> list[GateCall]:
    """An ``item/fileChange/requestApproval`` as one file call per path it touches.

    The paths are those of the item's ``item/started`` notification (``item``); a move
    counts for both its paths. Without them (the item was never announced) the request
    becomes one call of the agent's own tool, which a person must decide.
    """
    iid = str(params.get("itemId") or "")
    reason = str(params.get("reason") or "")
    changes = [c for c in (item or {}).get("changes") or [] if isinstance(c, dict)]
    if not changes:
        return [GateCall(iid, "fileChange", "apply_patch", {"item": iid}, dict(params), reason)]
    calls: list[GateCall] = []
    for change in changes:
        kind = change.get("kind")
        kind_name = str(kind.get("type") if isinstance(kind, dict) else kind or "update")
        moved = kind.get("move_path") if isinstance(kind, dict) else None
        diff = str(change.get("diff") or "")
        path = workspace_relative(change.get("path"), workspace)
        if kind_name == "add":
            calls.append(GateCall(iid, "fileChange", "file_write", {"path": path, "content": diff}, change, reason))
        elif kind_name == "delete":
            calls.append(GateCall(iid, "fileChange", "file_delete", {"path": path}, change, reason))
        else:
            calls.append(GateCall(iid, "fileChange", "file_edit", {"path": path, "diff": diff}, change, reason))
        if moved:
            calls.append(
                GateCall(
                    iid,
                    "fileChange",
                    "file_write",
                    {"path": workspace_relative(moved, workspace), "diff": diff},
                    change,
                    reason,
                )
            )
    return calls
