"""A stored session written as a Claude Code session file, for ``claude --resume <uuid>``.

The file is what Claude Code itself writes (checked against Claude Code 2.1.332): JSON
lines under ``$CLAUDE_CONFIG_DIR/projects/<slug>/<uuid>.jsonl`` (``~/.claude`` without the
variable), where the slug is the workspace path with every character but ``a-zA-Z0-9`` made
``-`` and, past 200 characters, cut there and given ``-<hash>`` (Claude Code's own 32-bit
string hash, base 36). Each message is one record with ``type`` (``user`` / ``assistant``),
``message`` (the Anthropic API message), ``uuid``, ``parentUuid`` (the chain Claude Code
follows back from the last record; without it only the last message is sent), ``sessionId``,
``cwd``, ``timestamp``, ``version``, ``gitBranch``, and ``usage`` in assistant messages; a
``custom-title`` record carries the session's title, so ``claude --resume "<title>"`` finds it.

The conversation is what the model would be sent next (:meth:`SessionStore.load`): after a
compaction, the summary and what followed. Thinking is kept only with a signature Anthropic
made (a session run on the ``anthropic`` backend); any other is dropped, since Claude Code's
API would refuse it. The file's UUID is derived from monkey's id (``uuid5``), so exporting
again replaces the same file, unless Claude Code has written to it since (its size or time
differ from what monkey wrote): then it is left alone and ``force`` writes a new session.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from monkey import events as ev
from monkey.messages import Message
from monkey.store import SessionStore, StoreError

__all__ = [
    "CLAUDE_LINK",
    "CLAUDE_CODE_VERSION",
    "Exported",
    "claude_home",
    "project_dir",
    "claude_uuid",
    "export_claude",
    "claude_records",
]

CLAUDE_LINK = "claude"
"""The ``session_links`` kind of a Claude Code session file monkey wrote or read."""
CLAUDE_CODE_VERSION = "2.1.332"
"""The Claude Code version whose session format is written (the ``version`` of each record)."""
NAMESPACE = uuid.UUID("5b0d3f0e-6d6f-4e6b-9f3a-6d6f6e6b6579")
"""The ``uuid5`` namespace of the session ids monkey gives Claude Code."""
_MAX_SLUG = 200
_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def claude_home(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ if env is None else env
    return Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude"


def _js_hash(text: str) -> int:
    """Claude Code's string hash: ``h = h * 31 + code unit`` over UTF-16, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def project_slug(cwd: str) -> str:
    """The folder name Claude Code keeps a workspace's sessions in (JavaScript's UTF-16 length:
    a character outside the BMP becomes two ``-``)."""
    slug = "".join(c if c.isascii() and c.isalnum() else "-" * (2 if ord(c) > 0xFFFF else 1) for c in cwd)
    if len(slug) <= _MAX_SLUG:
        return slug
    return f"{slug[:_MAX_SLUG]}-{_base36(abs(_js_hash(cwd)))}"


def project_dir(cwd: str, env: dict[str, str] | None = None) -> Path:
    """Where Claude Code keeps the sessions of workspace ``cwd``."""
    return claude_home(env) / "projects" / project_slug(cwd)


def claude_uuid(session_id: str) -> str:
    """The Claude Code session id of monkey session ``session_id`` (the same every time)."""
    return str(uuid.uuid5(NAMESPACE, f"monkey-session:{session_id}"))


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"


def _tool_id(call_id: str) -> str:
    """A tool call id the Anthropic API takes (``^[a-zA-Z0-9_-]+$``)."""
    return _ID_CHARS.sub("_", call_id) or "toolu_monkey"


@dataclass
class Exported:
    """What :func:`export_claude` wrote."""

    uuid: str
    path: Path
    records: int
    notes: list[str] = field(default_factory=list)
    """What a person should know: a compacted session, dropped thinking, a new file."""


def _usages(lines: list[bytes]) -> list[dict[str, int]]:
    """The usage of each model message, in the order of the ``message_completed`` events."""
    out: list[dict[str, int]] = []
    pending: dict[str, int] | None = None
    for raw in lines:
        try:
            event = ev.decode(raw)
        except ev.DecodeError:
            continue
        if isinstance(event, ev.Usage):
            pending = {"input_tokens": event.input_tokens, "output_tokens": event.output_tokens}
        elif isinstance(event, ev.MessageCompleted):
            out.append(pending or {"input_tokens": 0, "output_tokens": 0})
            pending = None
    return out


def claude_records(
    messages: list[Message],
    *,
    session: str,
    cwd: str,
    branch: str,
    model: str,
    title: str,
    signed: bool,
    usages: list[dict[str, int]],
    start: float,
) -> tuple[list[dict[str, Any]], int]:
    """The records of a Claude Code session file for ``messages``; returns them and how many
    thinking blocks were dropped (``signed``: the signatures are Anthropic's)."""
    records: list[dict[str, Any]] = []
    parent: str | None = None
    dropped = 0
    base = uuid.UUID(session)
    usage_at = iter(usages)

    def add(kind: str, message: dict[str, Any]) -> None:
        nonlocal parent
        n = len(records)
        record_id = str(uuid.uuid5(base, str(n)))
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session,
                "version": CLAUDE_CODE_VERSION,
                "gitBranch": branch,
                "type": kind,
                "message": message,
                "uuid": record_id,
                "timestamp": _stamp(start + n / 1000),
            }
        )
        parent = record_id

    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "tool":
            results = []
            while i < len(messages) and messages[i].role == "tool":
                t = messages[i]
                results.append(
                    {
                        "tool_use_id": _tool_id(t.tool_call_id),
                        "type": "tool_result",
                        "content": t.content,
                        "is_error": t.is_error,
                    }
                )
                i += 1
            add("user", {"role": "user", "content": results})
            continue
        i += 1
        if m.role == "user":
            add("user", {"role": "user", "content": m.content})
            continue
        blocks: list[dict[str, Any]] = []
        if m.thinking:
            if signed and m.thinking_signature:
                blocks.append({"type": "thinking", "thinking": m.thinking, "signature": m.thinking_signature})
            else:
                dropped += 1
        if m.content:
            blocks.append({"type": "text", "text": m.content})
        for call in m.tool_calls:
            blocks.append({"type": "tool_use", "id": _tool_id(call.id), "name": call.name, "input": call.arguments})
        if not blocks:
            blocks.append({"type": "text", "text": ""})
        usage = next(usage_at, {"input_tokens": 0, "output_tokens": 0})
        add(
            "assistant",
            {
                "id": f"msg_monkey_{len(records)}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": "tool_use" if m.tool_calls else "end_turn",
                "stop_sequence": None,
                "usage": {**usage, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            },
        )
    records.append({"type": "custom-title", "customTitle": title, "sessionId": session})
    return records, dropped


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


async def export_claude(
    store: SessionStore, ref: str, *, force: bool = False, env: dict[str, str] | None = None
) -> Exported:
    """Write session ``ref`` as a Claude Code session file (see the module); :class:`StoreError`
    when it cannot (no such session, a file Claude Code has written to since, without ``force``)."""
    from monkey.gitinfo import current_branch

    info = await store.find(ref)
    restored = await store.load(info.id)
    links = await store.fetchall(
        "SELECT foreign_id, path, size, mtime FROM session_links WHERE session_id = ? AND kind = ?",
        (info.id, CLAUDE_LINK),
    )
    session = claude_uuid(info.id)
    notes: list[str] = []
    folder = project_dir(info.workspace, env)
    if links:
        session, known, size, mtime = links[0][0], Path(links[0][1]), links[0][2], links[0][3]
        folder = known.parent
        try:
            st = known.stat()
        except FileNotFoundError:
            st = None
        if st is not None and (st.st_size != size or st.st_mtime != mtime):
            if not force:
                raise StoreError(
                    f"Claude Code has written to {known} since monkey exported it (claude --resume "
                    f"{session} goes on there); it is left as it is: --force writes a new session file"
                )
            session = str(uuid.uuid4())
            folder = project_dir(info.workspace, env)
            notes.append(f"{known} is left as Claude Code wrote it; this is a new Claude Code session")
    path = folder / f"{session}.jsonl"
    if not links and path.exists() and not force:
        raise StoreError(f"{path} is there already and monkey did not write it; --force writes a new session file")
    if not links and path.exists():
        session = str(uuid.uuid4())
        path = folder / f"{session}.jsonl"
    if restored.summaries and restored.messages and restored.messages[0].content in restored.summaries:
        notes.append("the session was compacted: what the model last saw is exported, the summary and what followed")
    records, dropped = claude_records(
        restored.messages,
        session=session,
        cwd=info.workspace,
        branch=current_branch(Path(info.workspace)) or "HEAD",
        model=info.model,
        title=info.title or info.id,
        signed=info.backend == "anthropic",
        usages=_usages(await store.event_lines(info.id, ("usage", "message_completed")))
        if not restored.summaries
        else [],
        start=info.created,
    )
    if dropped:
        notes.append(
            f"{dropped} thinking block(s) without an Anthropic signature left out (Claude Code's API would refuse them)"
        )
    data = b"".join(msgspec.json.encode(r) + b"\n" for r in records)
    try:
        _write_atomic(path, data)
        st = path.stat()
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    await store.write(
        [
            (
                "INSERT INTO session_links (session_id, kind, foreign_id, path, size, mtime) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id, kind) DO UPDATE SET foreign_id = excluded.foreign_id, path = excluded.path, "
                "size = excluded.size, mtime = excluded.mtime",
                (info.id, CLAUDE_LINK, session, str(path), st.st_size, st.st_mtime),
                False,
            )
        ],
        doing="keep the export's link",
    )
    return Exported(session, path, len(records), notes)
