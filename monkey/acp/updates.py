"""monkey's events as ACP ``session/update`` payloads (pure: no I/O, no connection).

Text deltas become agent message chunks, thinking deltas thought chunks; a tool call becomes
a ``tool_call`` (status ``pending``) with a kind from its tool's name, then
``tool_call_update``s: ``in_progress`` when it starts, ``completed`` or ``failed`` with its
output (and its diff, one ``diff`` content per hunk) when it ends. Stored history is
replayed with :func:`history_updates`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import update_current_mode
from acp.schema import ToolCallLocation, ToolKind

from monkey.events import (
    Error,
    Event,
    Fallback,
    MessageCompleted,
    ModeChanged,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResult,
    ToolStarted,
    TurnCompleted,
)
from monkey.store.history import HistoryItem, Said, ToolUse

__all__ = [
    "tool_kind",
    "tool_title",
    "diff_contents",
    "stop_reason",
    "Translator",
    "history_updates",
    "tool_start",
    "tool_end",
]

_KINDS: dict[str, ToolKind] = {
    "file_read": "read",
    "list_directory": "read",
    "process_output": "read",
    "process_list": "read",
    "file_write": "edit",
    "file_edit": "edit",
    "file_delete": "delete",
    "shell_execute": "execute",
    "glob_search": "search",
    "grep_search": "search",
    # the tools external agents (Claude Code, Codex) report under their own names
    "read": "read",
    "ls": "read",
    "write": "edit",
    "edit": "edit",
    "multiedit": "edit",
    "notebookedit": "edit",
    "bash": "execute",
    "command_execution": "execute",
    "grep": "search",
    "glob": "search",
    "file_change": "edit",
    "webfetch": "fetch",
    "websearch": "fetch",
}


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of a tool: read, edit, delete, execute, search, fetch or other."""
    return _KINDS.get(name.lower(), "other")


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """A short title for a tool call: ``Write a.txt``, ``Run `ls -l` ``."""
    path = str(arguments.get("path", "") or arguments.get("file_path", ""))
    words = {
        "file_read": "Read",
        "file_write": "Write",
        "file_edit": "Edit",
        "file_delete": "Delete",
        "list_directory": "List",
    }
    if name in words:
        return f"{words[name]} {path or '.'}"
    if name == "shell_execute" or name.lower() == "bash":
        command = " ".join(str(arguments.get("command", "")).split())
        return f"Run `{command[:120]}`"
    if name in ("grep_search", "glob_search"):
        where = f" in {path}" if path and path != "." else ""
        return f"Search {arguments.get('pattern', '')!r}{where}"
    return f"{name} {path}".strip()


def _locations(workspace: Path, arguments: dict[str, Any]) -> list[ToolCallLocation] | None:
    path = arguments.get("path") or arguments.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    return [ToolCallLocation(path=str(workspace / path))]


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_contents(workspace: Path, diff: str) -> list[Any]:
    """ACP ``diff`` contents from a unified diff of one file: one per hunk, old and new text.

    A hunk that adds to an empty file (``-0,0``) has no old text: the file is new.
    """
    out: list[Any] = []
    path = ""
    old: list[str] | None = None
    new: list[str] = []
    new_file = False

    def close() -> None:
        if old is not None and path:
            out.append(tool_diff_content(str(workspace / path), "".join(new), None if new_file else "".join(old)))

    for line in diff.splitlines(keepends=True):
        if line.startswith("+++ "):
            name = line[4:].strip()
            path = name[2:] if name.startswith("b/") else name
        elif line.startswith("--- "):
            continue
        elif (m := _HUNK.match(line)) is not None:
            close()
            old, new = [], []
            new_file = m.group(1) == "0" and m.group(2) == "0"
        elif old is not None:
            body = line[1:]
            if line.startswith(" "):
                old.append(body)
                new.append(body)
            elif line.startswith("-"):
                old.append(body)
            elif line.startswith("+"):
                new.append(body)
            elif line.startswith("\\"):  # "\ No newline at end of file": the line before has none
                target = new if new else old
                if target:
                    target[-1] = target[-1].rstrip("\n")
    close()
    return out


def stop_reason(turn: TurnCompleted, last_message: MessageCompleted | None) -> str:
    """The ACP stop reason of a finished turn.

    A cancelled turn is ``cancelled``; one stopped at ``--max-iterations`` is
    ``max_turn_requests``; a model that refused or ran out of tokens says so
    (``refusal``, ``max_tokens``); everything else (an answer, a person's denial, an error,
    which the person was shown as text) is ``end_turn``.
    """
    if turn.reason == "cancelled":
        return "cancelled"
    if turn.reason == "max_iterations":
        return "max_turn_requests"
    if last_message is not None and last_message.stop_reason in ("refusal", "max_tokens"):
        return last_message.stop_reason
    return "end_turn"


def tool_start(workspace: Path, call_id: str, name: str, arguments: dict[str, Any]) -> Any:
    """The ``tool_call`` update that announces a call (status ``pending``)."""
    return start_tool_call(
        call_id,
        tool_title(name, arguments),
        kind=tool_kind(name),
        status="pending",
        locations=_locations(workspace, arguments),
        raw_input=arguments,
    )


def tool_end(workspace: Path, result: ToolResult) -> Any:
    """The ``tool_call_update`` that closes a call: its status, diff and output."""
    content: list[Any] = diff_contents(workspace, result.diff) if result.diff else []
    if result.output and not (content and result.ok):
        content.append(tool_content(text_block(result.output)))
    return update_tool_call(
        result.call_id,
        status="completed" if result.ok else "failed",
        content=content or None,
        raw_output={"output": result.output},
    )


class Translator:
    """Turns one session's live events into updates (remembers what one message streamed)."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.streamed = False
        """Whether the message being written came as deltas (else its text is sent when it completes)."""
        self.last_message: MessageCompleted | None = None
        self.children: set[str] = set()
        """Sessions of sub-agents (``task`` calls): their tool calls are shown, their text is not
        (it comes back as the task's result)."""

    def updates(self, event: Event) -> list[Any]:
        """The updates ``event`` shows as (often none)."""
        if event.type == "subagent_started":
            self.children.add(event.child_session_id)  # type: ignore[attr-defined]
        if event.session_id in self.children and not isinstance(event, (ToolCallEvent, ToolStarted, ToolResult)):
            return []
        match event:
            case TextDelta(text=text):
                self.streamed = True
                return [update_agent_message_text(text)] if text else []
            case ThinkingDelta(text=text):
                return [update_agent_thought_text(text)] if text else []
            case MessageCompleted():
                self.last_message = event
                streamed, self.streamed = self.streamed, False
                if streamed:
                    return []
                out = [update_agent_thought_text(event.thinking)] if event.thinking else []
                return out + ([update_agent_message_text(event.text)] if event.text else [])
            case ToolCallEvent(call_id=call_id, name=name, arguments=arguments):
                return [tool_start(self.workspace, call_id, name, arguments)]
            case ToolStarted(call_id=call_id):
                return [update_tool_call(call_id, status="in_progress")]
            case ToolResult():
                return [tool_end(self.workspace, event)]
            case Error(message=message):
                return [update_agent_message_text(f"\n\nmonkey: {message}\n")]
            case ModeChanged(mode=mode, by=by) if by != "user":  # an approved plan, a workflow's stage
                return [update_current_mode(mode)]
            case Fallback(from_backend=old, to_backend=new, reason=reason):
                return [update_agent_message_text(f"\n\nmonkey: switched from {old} to {new}: {reason}\n")]
        return []


def history_updates(workspace: Path, items: list[HistoryItem]) -> list[Any]:
    """A stored conversation (:func:`monkey.store.history.history_items`) as updates, in order."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, Said):
            out.append(
                update_user_message_text(item.text) if item.role == "user" else update_agent_message_text(item.text)
            )
        elif isinstance(item, ToolUse):
            call = item.call
            out.append(tool_start(workspace, call.call_id, call.name, call.arguments))
            if item.result is not None:
                out.append(tool_end(workspace, item.result))
            else:  # monkey stopped while it ran: it never finished
                out.append(update_tool_call(call.call_id, status="failed"))
    return out
