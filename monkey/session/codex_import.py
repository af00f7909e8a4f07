"""A Codex rollout file brought into monkey as a stored session (``monkey sessions import codex``).

Codex keeps each session as ``rollout-<time>-<id>.jsonl`` under ``$CODEX_HOME/sessions/YYYY/MM/DD/``
(``~/.codex`` without the variable): a ``session_meta`` record (id, cwd), then ``response_item``
records, the Responses API items of the conversation, among ``event_msg`` and other records
monkey leaves out. A prompt is a ``user`` message Codex also reported as the person's
(``item_completed`` of a ``UserMessage``; the context Codex adds itself, such as
``<environment_context>``, is not one); ``function_call`` / ``custom_tool_call`` items are the
model's calls (a shell call, ``exec_command`` / ``shell_command`` / ``shell``, becomes monkey's
``shell_execute``; others, such as ``apply_patch``, are kept under Codex's name) and their
``*_output`` items the results; reasoning is encrypted for OpenAI alone and left out. The file
is only read (see :func:`~monkey.session.claude_import.read_stable`), and importing again
updates the same monkey session.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monkey import events as ev
from monkey.session.claude_import import Imported, read_stable, write_import
from monkey.store import SessionStore, StoreError

__all__ = ["CODEX_LINK", "codex_home", "find_rollout", "import_codex"]

CODEX_LINK = "codex-import"
"""The ``session_links`` kind of an imported Codex session (``foreign_id``: its id)."""
_SHELL = {"exec_command": "cmd", "shell_command": "command", "shell": "command", "local_shell": "command"}


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """Codex's folder: ``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ if env is None else env
    return Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else Path.home() / ".codex"


def find_rollout(ref: str, env: dict[str, str] | None = None) -> Path:
    """The rollout file ``ref`` names: a path, or a Codex session id."""
    path = Path(ref).expanduser()
    if path.suffix == ".jsonl" and path.is_file():
        return path
    sessions = codex_home(env) / "sessions"
    found = sorted(sessions.glob(f"**/rollout-*{ref}.jsonl")) if ref.strip() and "/" not in ref else []
    if len(found) == 1:
        return found[0]
    if found:
        raise StoreError(f"several Codex rollouts end in {ref!r}: " + ", ".join(p.name for p in found))
    raise StoreError(f"{ref!r} is not a rollout file nor a Codex session id under {sessions}")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))


def _call(item: dict[str, Any]) -> ev.ToolCallSpec:
    name = str(item.get("name") or "unknown")
    call_id = str(item.get("call_id") or item.get("id") or "")
    if item.get("type") == "custom_tool_call":
        return ev.ToolCallSpec(id=call_id, name=name, arguments={"input": str(item.get("input") or "")})
    try:
        args = json.loads(item.get("arguments") or "{}")
    except ValueError:
        args = {"arguments": str(item.get("arguments"))}
    if not isinstance(args, dict):
        args = {"arguments": args}
    if name in _SHELL:
        command = args.get(_SHELL[name])
        if isinstance(command, list):  # ["bash", "-lc", "..."]
            command = command[-1] if command[:1] in (["bash"], ["sh"], ["/bin/bash"]) else shlex.join(command)
        return ev.ToolCallSpec(id=call_id, name="shell_execute", arguments={"command": str(command or "")})
    return ev.ToolCallSpec(id=call_id, name=name, arguments=args)


def _events(records: list[dict[str, Any]], sid: str) -> tuple[list[ev.Event], str, list[str]]:
    prompts = {
        _text(r["payload"]["item"].get("content"))
        for r in records
        if r.get("type") == "event_msg"
        and r["payload"].get("type") == "item_completed"
        and isinstance(r["payload"].get("item"), dict)
        and r["payload"]["item"].get("type") == "UserMessage"
    }
    prompts |= {
        str(r["payload"].get("message", ""))
        for r in records
        if r.get("type") == "event_msg" and r["payload"].get("type") == "user_message"
    }
    out: list[ev.Event] = []
    notes: list[str] = []
    turn = 0
    model = ""
    text = ""
    calls: list[Any] = []
    names: dict[str, str] = {}
    reasoning = 0
    now = time.time()

    def flush(ts: float) -> None:
        nonlocal text, calls
        if text or calls:
            out.append(
                ev.MessageCompleted(
                    session_id=sid, ts=ts, text=text, tool_calls=calls, stop_reason="tool_use" if calls else "end_turn"
                )
            )
        text, calls = "", []

    for r in records:
        payload = r["payload"]
        if r.get("type") == "turn_context":
            model = str(payload.get("model") or model)
        if r.get("type") != "response_item":
            continue
        kind = payload.get("type")
        ts = now
        if kind == "message" and payload.get("role") == "user":
            said = _text(payload.get("content"))
            if said not in prompts:
                continue  # context Codex adds itself
            flush(ts)
            if turn:
                out.append(ev.TurnCompleted(session_id=sid, ts=ts, turn=turn, reason="completed"))
            turn += 1
            out.append(ev.TurnStarted(session_id=sid, ts=ts, turn=turn, prompt=said))
        elif kind == "message" and payload.get("role") == "assistant":
            if calls:
                flush(ts)
            text += _text(payload.get("content"))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call = _call(payload)
            names[call.id] = call.name
            calls.append(call)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            flush(ts)
            output = payload.get("output")
            if isinstance(output, dict):
                output = output.get("content", json.dumps(output))
            call_id = str(payload.get("call_id"))
            out.append(
                ev.ToolResult(
                    session_id=sid,
                    ts=ts,
                    call_id=call_id,
                    name=names.get(call_id, "unknown"),
                    ok=True,
                    output=_text(output) if isinstance(output, list) else str(output or ""),
                )
            )
        elif kind == "reasoning":
            reasoning += 1
    flush(now)
    if turn:
        out.append(ev.TurnCompleted(session_id=sid, ts=now, turn=turn, reason="completed"))
    if reasoning:
        notes.append(f"{reasoning} reasoning item(s) left out (encrypted for OpenAI alone)")
    return out, model, notes


async def import_codex(store: SessionStore, ref: str, *, env: dict[str, str] | None = None) -> Imported:
    """Import (or update the import of) the Codex session ``ref`` names; see the module."""
    path = find_rollout(ref, env)
    notes: list[str] = []
    records: list[dict[str, Any]] = []
    lines = read_stable(path).split(b"\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            notes.append(
                "its last line was cut short; left out" if i == len(lines) - 1 else "a line that is not JSON left out"
            )
            continue
        if isinstance(record, dict) and isinstance(record.get("payload"), dict):
            records.append(record)
    meta = next((r["payload"] for r in records if r.get("type") == "session_meta"), None)
    if meta is None:
        raise StoreError(f"{path} has no session_meta record: it is not a Codex rollout monkey can read")
    foreign = str(meta.get("id") or meta.get("session_id") or path.stem)
    cwd = str(meta.get("cwd") or os.getcwd())
    events, model, more = _events(records, "")
    first = next((e.prompt for e in events if isinstance(e, ev.TurnStarted)), "")
    if not events:
        raise StoreError(f"{path} holds no conversation monkey can read")

    def events_for(sid: str) -> tuple[list[ev.Event], str]:
        made, found, _ = _events(records, sid)
        return made, found

    return await write_import(
        store,
        kind=CODEX_LINK,
        foreign=foreign,
        path=path,
        cwd=cwd,
        title=" ".join(first.split())[:100],
        backend="codex",
        notes=notes + more,
        events_for=events_for,
    )
