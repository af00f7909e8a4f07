"""``monkey sessions list|show|search|rename|fork|export|rm|prune``: the stored sessions."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from monkey import events as ev
from monkey.session.stored import format_when
from monkey.safe_text import escape_controls, json_for_terminal
from monkey.store import SessionInfo, SessionStore, StoreError

__all__ = ["run_sessions_command", "render_markdown"]


def _line(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _safe(text: str) -> str:
    return escape_controls(text, keep_newlines=False)


async def _list(store: SessionStore, args: argparse.Namespace) -> int:
    workspace = None if args.all else str(Path(args.cwd or ".").expanduser().resolve())
    sessions = await store.list_sessions(workspace)
    if args.json:
        _line(json.dumps([s.to_dict() for s in sessions], ensure_ascii=False))
        return 0
    if not sessions:
        where = "" if workspace is None else f" in {workspace} (--all lists every workspace)"
        _line(f"no sessions{where}")
        return 0
    for s in sessions:
        where = f"  {_safe(s.workspace)}" if args.all else ""
        _line(
            f"{s.id}  {format_when(s.updated)}  {s.state:<11} {s.turns:>3} {'turn ' if s.turns == 1 else 'turns'}"
            f" {s.events:>6} events"
            f"{where}  {_safe(s.title[:70])}"
        )
    return 0


def _describe(info: SessionInfo) -> list[str]:
    from monkey.worktrees import describe

    worktree = describe(Path(info.workspace)).removeprefix("worktree ")
    return [
        f"session    {info.id}",
        f"workspace  {_safe(info.workspace)}",
        *([f"worktree   {_safe(worktree)}"] if worktree else []),
        f"title      {_safe(info.title)}",
        f"backend    {info.backend} · {_safe(info.model)}",
        f"created    {format_when(info.created)}",
        f"updated    {format_when(info.updated)}",
        f"state      {info.state}",
        f"turns      {info.turns}",
        f"events     {info.events}",
        f"usage      {info.input_tokens} input + {info.output_tokens} output tokens, ${info.cost_usd:.4f}",
    ]


async def _show(store: SessionStore, args: argparse.Namespace) -> int:
    info = await store.find(args.id)
    restored = await store.load(info.id)
    for line in _describe(info):
        _line(line)
    if restored.problems:
        _line("integrity  DAMAGED: " + "; ".join(restored.problems))
    else:
        _line(f"integrity  intact ({restored.events_check.rows} events, {restored.nodes_check.rows} nodes)")
    for repair in restored.repairs:
        _line(f"repair     {repair}")
    tokens = sum(n.tokens for n in restored.nodes)
    _line(f"context    {len(restored.messages)} messages, about {tokens} tokens")
    if info.parent:
        _line(f"parent     {info.parent}")
    for line in await _links(store, info):
        _line(line)
    tree = await _tree(store, info.id)
    if tree:
        _line("sub-agents")
        for line in tree:
            _line(line)
    _line("")
    for message in restored.messages:
        kind = "summary" if message.role == "user" and message.content in restored.summaries else message.role
        text = message.content.strip().splitlines()[0] if message.content.strip() else ""
        calls = ", ".join(c.name for c in message.tool_calls)
        extra = f" -> {calls}" if calls else ""
        _line(f"  {kind:<9} {_safe(text[:100])}{extra}")
    return 0


async def _links(store: SessionStore, info: SessionInfo) -> list[str]:
    """Where the session came from or went: a fork's original, a Claude Code or Codex session."""
    said = {
        "fork": "forked from",
        "claude": "claude code",
        "claude-import": "from claude code",
        "codex-import": "from codex",
    }
    rows = await store.fetchall(
        "SELECT kind, foreign_id, path, detail FROM session_links WHERE session_id = ? ORDER BY kind", (info.id,)
    )
    out = [
        f"{said.get(kind, kind):<10} {_safe(foreign)}"
        + (f" after turn {detail}" if kind == "fork" else "")
        + (f"  {_safe(path)}" if path else "")
        for kind, foreign, path, detail in rows
    ]
    if info.backend == "claude-code":  # the CLI's own session, and its file
        from monkey.session.claude_export import project_dir

        for raw in await store.event_lines(info.id, ("agent_session",)):
            try:
                event = ev.decode(raw)
            except ev.DecodeError:
                continue
            if isinstance(event, ev.AgentSession) and event.agent_session_id:
                path = project_dir(info.workspace) / f"{event.agent_session_id}.jsonl"
                out.append(f"agent      claude code session {_safe(event.agent_session_id)}  {_safe(str(path))}")
    return list(dict.fromkeys(out))


async def _tree(store: SessionStore, session_id: str, depth: int = 1) -> list[str]:
    """One line per sub-agent session ``session_id`` started, each followed by its own, indented."""
    children = await store.children(session_id)
    if not children:
        return []
    started: dict[str, ev.SubagentStarted] = {}
    for raw in await store.event_lines(session_id, ("subagent_started",)):
        try:
            event = ev.decode(raw)
        except ev.DecodeError:
            continue
        if isinstance(event, ev.SubagentStarted):
            started[event.child_session_id] = event
    out: list[str] = []
    for child in children:
        how = started.get(child.id)
        agent = how.agent if how is not None else "?"
        label = how.description if how is not None and how.description else child.title
        out.append(
            f"{'  ' * depth}{child.id}  {_safe(agent)}  {child.state:<9} {child.turns} turn"
            f"{'s' if child.turns != 1 else ''}  ${child.cost_usd:.4f}  {_safe(label[:60])}"
        )
        out += await _tree(store, child.id, depth + 1)
    return out


def render_markdown(lines: list[bytes]) -> str:
    """A session's stored events as a readable markdown transcript."""
    out: list[str] = []
    for raw in lines:
        try:
            event = ev.decode(raw)
        except ev.DecodeError:
            continue
        match event:
            case ev.SessionStarted():
                what = "Resumed" if event.resumed else "Session"
                out.append(f"# {what} {event.session_id}\n\n`{event.backend}` · `{event.model}` in `{event.workspace}`")
            case ev.TurnStarted():
                out.append(f"## User (turn {event.turn})\n\n{event.prompt}")
            case ev.MessageCompleted():
                parts = ["## Assistant"]
                if event.text:
                    parts.append(event.text)
                for call in event.tool_calls:
                    parts.append(f"**{call.name}** `{json.dumps(call.arguments, ensure_ascii=False)}`")
                out.append("\n\n".join(parts))
            case ev.ToolResult():
                state = "ok" if event.ok else "failed"
                out.append(f"### {event.name} ({state})\n\n```\n{event.output.replace('```', '` ` `')}\n```")
            case ev.ApprovalResolved():
                out.append(
                    f"*{event.name}: {event.decision} by {event.by}*" + (f" — {event.reason}" if event.reason else "")
                )
            case ev.ContextCompacted():
                out.append(
                    f"> context compacted ({event.trigger}): {event.messages_compacted} messages, "
                    f"{event.tokens_before} → {event.tokens_after} tokens"
                )
            case ev.PlanSaved():
                said = {
                    "approved": f"approved, went on in {event.mode} mode",
                    "sent_back": "sent back",
                    "rejected": "rejected",
                    "recorded": "recorded (nobody to approve it)",
                }[event.outcome]
                out.append(
                    f"## Plan ({said})\n\n{event.plan}"
                    + (f"\n\n*{event.feedback}*" if event.feedback else "")
                    + (f"\n\n(kept in `{event.path}`)" if event.path else "")
                )
            case ev.ModeChanged():
                out.append(f"> mode: {event.mode}")
            case ev.Error():
                out.append(f"> error: {event.message}")
            case ev.TurnCompleted() if event.reason != "completed":
                out.append(
                    f"> turn {event.turn} ended: {event.reason}" + (f" — {event.message}" if event.message else "")
                )
            case _:
                pass
    return "\n\n".join(out) + "\n"


async def _export(store: SessionStore, args: argparse.Namespace) -> int:
    if args.format == "claude":
        from monkey.session.claude_export import export_claude

        done = await export_claude(store, args.id, force=args.force)
        _line(f"wrote {done.records} records to {_safe(str(done.path))}")
        for note in done.notes:
            _line(f"note: {_safe(note)}")
        _line(f"continue it in Claude Code with: claude --resume {done.uuid}")
        return 0
    info = await store.find(args.id)
    lines = await store.event_lines(info.id)
    if args.format == "jsonl" and sys.stdout.isatty():  # the same JSON, but inert on a terminal
        for data in lines:
            sys.stdout.write(json_for_terminal(data.decode("utf-8", errors="replace")) + "\n")
    elif args.format == "jsonl":
        out = sys.stdout.buffer
        for data in lines:
            out.write(data + b"\n")
        out.flush()
    else:
        sys.stdout.write(escape_controls(render_markdown(lines)))  # model and tool text never drives the terminal
    return 0


async def _rename(store: SessionStore, args: argparse.Namespace) -> int:
    info = await store.find(args.id)
    title = " ".join(" ".join(args.title).split())
    if not title:
        raise StoreError("the title is empty")
    await store.rename(info.id, title)
    _line(f"renamed {info.id}: {_safe(title)}")
    return 0


async def _search(store: SessionStore, args: argparse.Namespace) -> int:
    from monkey.store.search import match_query, search

    text = " ".join(args.text)
    if not match_query(text):
        raise StoreError("search needs at least one word")
    workspace = None if args.all else str(Path(args.cwd or ".").expanduser().resolve())
    hits = await search(store, text, workspace=workspace, limit=max(1, args.limit))
    if args.json:
        _line(json.dumps([h.to_dict() for h in hits], ensure_ascii=False))
        return 0
    if not hits:
        where = "" if workspace is None else f" in {workspace}'s sessions (--all searches every workspace)"
        _line(f"nothing found{where}")
        return 0
    what = {"turn_started": "prompt", "message_completed": "answer", "tool_result": "tool result"}
    for hit in hits:
        where = f"  {_safe(hit.workspace)}" if args.all else ""
        _line(
            f"{hit.session_id}  turn {hit.turn:<3} {what.get(hit.kind, hit.kind):<11}{where}  {_safe(hit.title[:50])}"
        )
        _line(f"    {_safe(hit.snippet)}")
    return 0


async def _fork(store: SessionStore, args: argparse.Namespace) -> int:
    from monkey.store.fork import fork_session

    original, fork = await fork_session(store, args.id, at_turn=args.at)
    _line(f"forked {original.id} after turn {fork.turns}: {fork.id}")
    _line(f"continue it with: monkey agent --resume {fork.id}")
    return 0


async def _import(store: SessionStore, args: argparse.Namespace) -> int:
    from monkey.session.claude_import import import_claude
    from monkey.session.codex_import import import_codex

    done = await (import_codex if args.source == "codex" else import_claude)(store, args.ref)
    what = "updated" if done.updated else "imported"
    _line(
        f"{what} {_safe(str(done.source))} as session {done.session_id} "
        f"({done.turns} turn{'s' if done.turns != 1 else ''})"
    )
    for note in done.notes:
        _line(f"note: {_safe(note)}")
    _line(f"continue it with: monkey agent --resume {done.session_id} (any backend)")
    return 0


async def _rm(store: SessionStore, args: argparse.Namespace) -> int:
    for ref in args.ids:
        info = await store.find(ref)
        if info.state == "active":
            raise StoreError(f"session {info.id} is open in a running monkey process; not deleted")
        await store.delete(info.id)
        _line(f"deleted {info.id}")
    return 0


async def _prune(store: SessionStore, args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise StoreError("--older-than needs a number of days, 0 or more")
    removed = await store.prune(args.older_than)
    _line(f"deleted {len(removed)} session(s) not used for {args.older_than:g} days")
    return 0


_ACTIONS = {
    "list": _list,
    "show": _show,
    "export": _export,
    "rm": _rm,
    "prune": _prune,
    "rename": _rename,
    "search": _search,
    "fork": _fork,
    "import": _import,
}


async def _run(args: argparse.Namespace) -> int:
    readonly = args.sessions_command in ("list", "show", "search") or (
        args.sessions_command == "export" and args.format != "claude"
    )  # these work on a full disk or read-only home
    async with await SessionStore.open(readonly=readonly) as store:
        return await _ACTIONS[args.sessions_command](store, args)


def run_sessions_command(args: argparse.Namespace) -> int:
    """Run ``monkey sessions ACTION`` and return the exit status."""
    if not getattr(args, "sessions_command", None):
        sys.stderr.write(
            "monkey: sessions needs an action: list, show, search, rename, fork, export, import, rm or prune\n"
        )
        return 2
    try:
        return asyncio.run(_run(args))
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}\n")
        return 1
    except BrokenPipeError:
        raise  # stdout's reader went away: the command line ends quietly (141)
