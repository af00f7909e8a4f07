"""An ACP agent's tool calls in monkey's vocabulary: what its permission requests ask, what its updates show.

A ``session/request_permission`` names a tool call with a ``kind``; monkey decides it as the call of
its own that does the same (:class:`~monkey.backends.gate.GateCall`): ``edit`` → ``file_edit`` (or
``file_write`` for a file the diff creates) per path, ``delete`` → ``file_delete``, ``move`` → a
``file_delete`` of the source and a ``file_write`` of the target, ``execute`` → ``shell_execute`` with
the command line, ``fetch`` → ``web_fetch`` with the URL, ``read`` / ``search`` → ``file_read`` /
``grep_search``; any other kind asks under the agent's own title.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from monkey.backends.gate import GateCall, workspace_relative

__all__ = ["content_text", "diff_text", "gate_calls", "tool_arguments"]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return getattr(obj, name, default) if obj is not None else default


def _paths(tool_call: Any, workspace: Path) -> list[str]:
    """The paths a tool call names (its diffs' paths, then its locations), workspace-relative, once each."""
    out: list[str] = []
    for item in _get(tool_call, "content") or []:
        if _get(item, "type") == "diff" and _get(item, "path"):
            out.append(workspace_relative(item.path, workspace))
    for loc in _get(tool_call, "locations") or []:
        if _get(loc, "path"):
            out.append(workspace_relative(loc.path, workspace))
    raw = _get(tool_call, "raw_input")
    if isinstance(raw, dict):
        for key in ("file_path", "path", "absolute_path", "filePath"):
            if isinstance(raw.get(key), str) and raw[key]:
                out.append(workspace_relative(raw[key], workspace))
    return list(dict.fromkeys(p for p in out if p))


def _creates(tool_call: Any, path: str, workspace: Path) -> bool:
    """Whether the edit makes a new file: its diff has no old text, or the file is not there (an agent may
    send an empty old text for a new file, or no diff at all)."""
    for item in _get(tool_call, "content") or []:
        if (
            _get(item, "type") == "diff"
            and workspace_relative(item.path, workspace) == path
            and _get(item, "old_text") is None
        ):
            return True
    return not (workspace / path).exists()


def _command(tool_call: Any) -> str:
    raw = _get(tool_call, "raw_input")
    if isinstance(raw, dict):
        for key in ("command", "cmd"):
            value = raw.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value:
                return " ".join(str(v) for v in value)
    return str(_get(tool_call, "title") or "")


def gate_calls(tool_call: Any, workspace: Path, runner: int = 0) -> list[GateCall]:
    """The monkey calls one ACP permission request asks for (several for an edit of several files);
    ``runner``: the agent's pid, which runs an ``execute`` itself once allowed."""
    call_id = str(_get(tool_call, "tool_call_id") or "")
    kind = str(_get(tool_call, "kind") or "other")
    title = str(_get(tool_call, "title") or kind)
    raw = _get(tool_call, "raw_input")
    raw = raw if isinstance(raw, dict) else {"input": raw} if raw is not None else {}
    paths = _paths(tool_call, workspace)
    reason = title

    def one(tool: str, **arguments: Any) -> GateCall:
        return GateCall(call_id=call_id, agent_tool=title, tool=tool, arguments=arguments, raw=raw, reason=reason)

    if kind == "execute":
        return [
            GateCall(
                call_id=call_id,
                agent_tool=title,
                tool="shell_execute",
                arguments={"command": _command(tool_call)},
                raw=raw,
                reason=reason,
                runner=runner,
            )
        ]
    if kind == "edit" and paths:
        return [one("file_write" if _creates(tool_call, p, workspace) else "file_edit", path=p) for p in paths]
    if kind == "delete" and paths:
        return [one("file_delete", path=p) for p in paths]
    if kind == "move" and paths:
        return [one("file_delete", path=paths[0])] + [one("file_write", path=p) for p in paths[1:]]
    if kind == "fetch":
        url = raw.get("url") or raw.get("urls") or raw.get("prompt") or title
        return [one("web_fetch", url=str(url))]
    if kind == "read" and paths:
        return [one("file_read", path=p) for p in paths]
    if kind == "search":
        return [
            one(
                "grep_search",
                pattern=str(raw.get("pattern") or raw.get("query") or title),
                **({"path": paths[0]} if paths else {}),
            )
        ]
    return [GateCall(call_id=call_id, agent_tool=title, tool=title, arguments=dict(raw), raw=raw, reason=reason)]


def diff_text(tool_call: Any, workspace: Path) -> str:
    """A unified diff of the tool call's diff contents (what the agent changes), for display."""
    parts: list[str] = []
    for item in _get(tool_call, "content") or []:
        if _get(item, "type") != "diff":
            continue
        path = workspace_relative(item.path, workspace)
        old = (item.old_text or "").splitlines(keepends=True)
        new = (item.new_text or "").splitlines(keepends=True)
        parts.extend(
            difflib.unified_diff(old, new, f"a/{path}" if item.old_text is not None else "/dev/null", f"b/{path}")
        )
    return "".join(parts)


def content_text(tool_call: Any) -> str:
    """The text a tool call's content holds (its output), joined."""
    out: list[str] = []
    for item in _get(tool_call, "content") or []:
        if _get(item, "type") == "content":
            text = _get(_get(item, "content"), "text")
            if isinstance(text, str):
                out.append(text)
    raw = _get(tool_call, "raw_output")
    if not out and raw is not None:
        out.append(raw if isinstance(raw, str) else str(raw))
    return "\n".join(out)


def tool_arguments(tool_call: Any, workspace: Path) -> dict[str, Any]:
    """What a ``tool_call`` event shows of the agent's call: its title, kind, paths and input."""
    args: dict[str, Any] = {"title": str(_get(tool_call, "title") or ""), "kind": str(_get(tool_call, "kind") or "")}
    paths = _paths(tool_call, workspace)
    if paths:
        args["paths"] = paths
    raw = _get(tool_call, "raw_input")
    if raw is not None:
        args["input"] = raw
    return args
