"""A Claude Code session file brought into monkey as a stored session (``monkey sessions import claude``).

The file is found by path, by Claude Code's session id (a ``<uuid>.jsonl`` under
``$CLAUDE_CONFIG_DIR/projects/``, ``~/.claude`` without the variable) or by its title (the
last ``custom-title`` record). It is read, never written: read whole, and read again when its
size or time changed while it was read (Claude Code still writing). The conversation is the
chain Claude Code itself follows: from the last message record back through ``parentUuid``
(side chains and records of other types are left out, and counted); a last line cut short
is left out and said. Each user prompt starts a turn; an answer's tool calls are mapped to
monkey's tools where they correspond (``Write`` → ``file_write``, ``Bash`` → ``shell_execute``,
``Read`` → ``file_read`` ... as the Claude Code backend maps them), and kept under Claude
Code's name otherwise (a foreign call: the model sees it, monkey has no tool by that name).

The events are written by a :class:`~monkey.store.recorder.Recorder` (numbered, hash-chained,
indexed for search) under a monkey id kept with the Claude Code id (``session_links``), so
importing again updates the same session, as long as monkey has not gone on with it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monkey import events as ev
from monkey.ids import new_id
from monkey.session.claude_export import claude_home
from monkey.store import SessionStore, StoreError
from monkey.store.recorder import Recorder

__all__ = [
    "IMPORT_LINK",
    "Imported",
    "find_claude_file",
    "read_claude_file",
    "import_claude",
    "write_import",
    "read_stable",
]

IMPORT_LINK = "claude-import"
"""The ``session_links`` kind of an imported Claude Code session (``foreign_id``: its id)."""
_READS = 5


@dataclass
class Imported:
    """What :func:`import_claude` made."""

    session_id: str
    source: Path
    turns: int
    updated: bool
    """Whether an earlier import of the same Claude Code session was updated."""
    notes: list[str] = field(default_factory=list)


def find_claude_file(ref: str, env: dict[str, str] | None = None) -> Path:
    """The session file ``ref`` names: a path, a Claude Code session id, or a title."""
    path = Path(ref).expanduser()
    if path.suffix == ".jsonl" and path.is_file():
        return path
    projects = claude_home(env) / "projects"
    try:
        uuid.UUID(ref)
    except ValueError:
        pass
    else:
        found = sorted(projects.glob(f"*/{ref}.jsonl"))
        if found:
            return found[0]
        raise StoreError(f"no Claude Code session {ref} under {projects}")
    titled = []
    for candidate in sorted(projects.glob("*/*.jsonl")):
        title = ""
        try:
            with open(candidate, "rb") as f:
                for line in f:
                    if b'"custom-title"' in line:
                        try:
                            title = json.loads(line).get("customTitle", title)
                        except ValueError:
                            continue
        except OSError:
            continue
        if title == ref:
            titled.append(candidate)
    if len(titled) == 1:
        return titled[0]
    if titled:
        raise StoreError(f"several Claude Code sessions are titled {ref!r}: " + ", ".join(p.stem for p in titled))
    raise StoreError(f"{ref!r} is not a session file, a Claude Code session id or a title under {projects}")


def read_stable(path: Path) -> bytes:
    """The file's bytes, read again while its size or time change under the read."""
    for _ in range(_READS):
        try:
            before = path.stat()
            data = path.read_bytes()
            after = path.stat()
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
        if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns) == (len(data), after.st_mtime_ns):
            return data
        time.sleep(0.05)
    raise StoreError(f"{path} kept changing while it was read (Claude Code is writing it); try again when it is done")


def read_claude_file(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The message records of the chain Claude Code would resume, in order, and notes."""
    data = read_stable(path)
    notes: list[str] = []
    records: list[dict[str, Any]] = []
    lines = data.split(b"\n")
    cut = bool(lines and lines[-1].strip())  # no newline after the last record
    unreadable = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if i == len(lines) - 1 and cut:
                notes.append(
                    "its last line was cut short (Claude Code was writing it, or the file was truncated); left out"
                )
            else:
                unreadable += 1
            continue
        if isinstance(record, dict):
            records.append(record)
    if unreadable:
        notes.append(f"{unreadable} line(s) that are not JSON left out")
    messages = {
        r["uuid"]: r
        for r in records
        if r.get("type") in ("user", "assistant")
        and isinstance(r.get("uuid"), str)
        and isinstance(r.get("message"), dict)
        and not r.get("isSidechain")
    }
    others = {r.get("type") for r in records if r.get("type") not in ("user", "assistant")}
    unknown = others - {
        "custom-title",
        "summary",
        "attachment",
        "system",
        "queue-operation",
        "last-prompt",
        "atis-latch",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "tools-used",
        "cost-state",
        "file-history-snapshot",
        "ai-title",
        "tag",
        "mode",
        "permission-mode",
    }
    if unknown:
        notes.append("records of types monkey does not read left out: " + ", ".join(sorted(str(t) for t in unknown)))
    leaf = next((r for r in reversed(records) if r.get("uuid") in messages), None)
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while leaf is not None and leaf["uuid"] not in seen:
        seen.add(leaf["uuid"])
        chain.append(leaf)
        parent = leaf.get("parentUuid")
        leaf = messages.get(parent) if parent else None
        if parent and leaf is None:  # an attachment or other record in between: go on through it
            step = next((r for r in records if r.get("uuid") == parent), None)
            while step is not None and step.get("uuid") not in messages:
                up = step.get("parentUuid")
                step = next((r for r in records if r.get("uuid") == up), None) if up else None
            leaf = step
    chain.reverse()
    return chain, notes


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _ts(record: dict[str, Any], fallback: float) -> float:
    stamp = record.get("timestamp")
    if isinstance(stamp, str):
        try:
            return time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        except ValueError:
            pass
    return fallback


def _events(chain: list[dict[str, Any]], workspace: Path, sid: str) -> tuple[list[ev.Event], str]:
    """monkey's events for the chain; returns them and the model named."""
    from monkey.backends.claude_code.tools import gate_call

    out: list[ev.Event] = []
    turn = 0
    model = ""
    names: dict[str, str] = {}
    now = time.time()
    i = 0
    while i < len(chain):
        record = chain[i]
        message = record["message"]
        ts = _ts(record, now)
        if record["type"] == "assistant":
            # Claude Code writes one record per content block of a message: put them together
            blocks = (
                list(message.get("content") or [])
                if isinstance(message.get("content"), list)
                else [{"type": "text", "text": str(message.get("content") or "")}]
            )
            while (
                i + 1 < len(chain)
                and chain[i + 1]["type"] == "assistant"
                and message.get("id")
                and chain[i + 1]["message"].get("id") == message.get("id")
            ):
                i += 1
                blocks += chain[i]["message"].get("content") or []
            i += 1
            model = str(message.get("model") or model)
            if turn == 0:
                turn = 1
                out.append(ev.TurnStarted(session_id=sid, ts=ts, turn=turn, prompt=""))
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            thinking = [b for b in blocks if b.get("type") == "thinking"]
            calls = []
            for b in blocks:
                if b.get("type") != "tool_use":
                    continue
                mapped = gate_call(
                    {"tool_name": b.get("name"), "input": b.get("input"), "tool_use_id": b.get("id")}, workspace
                )
                names[str(b.get("id"))] = mapped.tool
                calls.append(ev.ToolCallSpec(id=str(b.get("id")), name=mapped.tool, arguments=dict(mapped.arguments)))
            out.append(
                ev.MessageCompleted(
                    session_id=sid,
                    ts=ts,
                    text=text,
                    tool_calls=calls,
                    thinking="".join(str(b.get("thinking", "")) for b in thinking),
                    thinking_signature=str(thinking[-1].get("signature", "")) if thinking else "",
                    stop_reason="tool_use" if calls else "end_turn",
                )
            )
            usage = message.get("usage")
            if isinstance(usage, dict):
                out.append(
                    ev.Usage(
                        session_id=sid,
                        ts=ts,
                        input_tokens=int(usage.get("input_tokens") or 0),
                        output_tokens=int(usage.get("output_tokens") or 0),
                    )
                )
            continue
        i += 1
        content = message.get("content")
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        for b in results:
            call_id = str(b.get("tool_use_id"))
            out.append(
                ev.ToolResult(
                    session_id=sid,
                    ts=ts,
                    call_id=call_id,
                    name=names.get(call_id, "unknown"),
                    ok=not b.get("is_error"),
                    output=_text(b.get("content")),
                )
            )
        prompt = _text(content)
        if results or not prompt.strip() or record.get("isMeta"):
            continue
        if turn:
            out.append(ev.TurnCompleted(session_id=sid, ts=ts, turn=turn, reason="completed"))
        turn += 1
        out.append(ev.TurnStarted(session_id=sid, ts=ts, turn=turn, prompt=prompt))
    if turn:
        out.append(ev.TurnCompleted(session_id=sid, ts=out[-1].ts, turn=turn, reason="completed"))
    return out, model


async def write_import(
    store: SessionStore,
    *,
    kind: str,
    foreign: str,
    path: Path,
    events_for,
    cwd: str,
    title: str,
    backend: str,
    notes: list[str],
) -> Imported:
    """Store an imported session (new, or the earlier import of ``foreign`` updated) from
    ``events_for(session_id) -> (events, model)``; see the module."""
    rows = await store.fetchall(
        "SELECT session_id FROM session_links WHERE kind = ? AND foreign_id = ?", (kind, foreign)
    )
    updated = bool(rows)
    sid = rows[0][0] if rows else new_id()
    if updated:
        info = await store.get(sid)
        if info is not None and info.status != "imported":
            raise StoreError(
                f"session {sid} (imported from {path}) has gone on in monkey since; it is left as it is "
                "(monkey sessions rm it to import afresh)"
            )
        if info is not None:
            await store.delete(sid)
    events, model = events_for(sid)
    recorder = Recorder(store, sid)
    first = events[0].ts if events else time.time()
    recorder.add(ev.SessionStarted(session_id=sid, ts=first, workspace=cwd, backend=backend, model=model))
    for event in events:
        recorder.add(event)
    await recorder.flush()
    st = path.stat()
    turns = sum(1 for e in events if isinstance(e, ev.TurnStarted))
    statements: list[tuple[str, Any, bool]] = [
        ("UPDATE sessions SET status = 'imported', pid = 0 WHERE id = ?", (sid,), False),
        (
            "INSERT INTO session_links (session_id, kind, foreign_id, path, size, mtime) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(session_id, kind) DO UPDATE SET foreign_id = excluded.foreign_id, path = excluded.path, "
            "size = excluded.size, mtime = excluded.mtime",
            (sid, kind, foreign, str(path), st.st_size, st.st_mtime),
            False,
        ),
    ]
    if title:
        statements.append(("UPDATE sessions SET title = ? WHERE id = ?", (title, sid), False))
    await store.write(statements, doing="import the session")
    return Imported(sid, path, turns, updated, notes)


async def import_claude(store: SessionStore, ref: str, *, env: dict[str, str] | None = None) -> Imported:
    """Import (or update the import of) the Claude Code session ``ref`` names; see the module."""
    path = find_claude_file(ref, env)
    chain, notes = read_claude_file(path)
    if not chain:
        raise StoreError(f"{path} holds no conversation monkey can read")
    foreign = str(chain[-1].get("sessionId") or path.stem)
    cwd = str(next((r.get("cwd") for r in reversed(chain) if r.get("cwd")), "") or os.getcwd())
    title = ""
    for line in reversed(path.read_bytes().splitlines()):
        if b'"custom-title"' in line:
            try:
                title = str(json.loads(line).get("customTitle", ""))
                break
            except ValueError:
                continue
    return await write_import(
        store,
        kind=IMPORT_LINK,
        foreign=foreign,
        path=path,
        cwd=cwd,
        title=title,
        backend="claude-code",
        notes=notes,
        events_for=lambda sid: _events(chain, Path(cwd), sid),
    )
