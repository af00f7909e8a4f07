"""The slash commands about stored sessions: ``/sessions``, ``/resume``, ``/rename``, ``/fork`` and ``/export``."""

from __future__ import annotations

from monkey.session.host import BUSY, Host
from monkey.session.replies import Note, Reply, ResumeSession, SessionList

__all__ = ["sessions", "resume", "rename", "fork", "export"]


async def _recent(host: Host):
    assert host.store is not None
    return await host.store.list_sessions(str(host.agent.workspace), limit=20)


async def sessions(host: Host, rest: str) -> list[Reply]:
    if host.store is None:
        return [Note("the session store is not open", "error")]
    return [SessionList(await _recent(host), host.agent.session_id)]


async def resume(host: Host, ref: str) -> list[Reply]:
    from monkey.store import StoreError

    if not ref:
        return await sessions(host, "")
    if host.working:
        return [Note(BUSY, "warning")]
    if host.store is None:
        return [Note("the session store is not open", "error")]
    if len(ref.split()) > 1:
        return [Note("usage: /resume N or /resume ID (an id prefix will do); /sessions lists them", "warning")]
    try:
        if ref.isdigit():
            recent = await _recent(host)
            if not 0 < int(ref) <= len(recent):
                return [Note(f"no session number {ref}; /sessions lists them", "warning")]
            target = recent[int(ref) - 1]
        else:
            target = await host.store.find(ref)
    except StoreError as exc:
        return [Note(str(exc), "warning")]
    if target.id == host.agent.session_id:
        return [Note("that is this session")]
    if target.workspace != str(host.agent.workspace):
        return [Note(f"session {target.id} belongs to {target.workspace}; run monkey there to resume it", "warning")]
    if target.state == "active":  # its lock is held: by another monkey process
        return [Note(f"session {target.id} is open in another monkey process", "warning")]
    return [ResumeSession(target.id)]


async def rename(host: Host, title: str) -> list[Reply]:
    """``/rename TITLE``: this session's title, in the store and in every list of sessions."""
    from monkey.store import StoreError

    title = " ".join(title.split())
    if not title:
        return [Note("usage: /rename TITLE", "warning")]
    if host.store is None or host.recorder is None:
        return [Note("the session store is not open", "error")]
    host.recorder.rename(title)
    try:
        await host.store.rename(host.agent.session_id, title)  # nothing yet when no turn has started it
    except StoreError as exc:
        return [Note(str(exc), "error")]
    return [Note(f"renamed this session: {title}")]


async def fork(host: Host, rest: str) -> list[Reply]:
    """``/fork``: a new session with this conversation so far, which the front end switches to."""
    from monkey.store import StoreError
    from monkey.store.fork import fork_session

    if rest:
        return [Note("usage: /fork (monkey sessions fork ID --at TURN forks at an earlier turn)", "warning")]
    if host.working:
        return [Note(BUSY, "warning")]
    if host.store is None or host.recorder is None:
        return [Note("the session store is not open", "error")]
    if not host.agent.started:
        return [Note("nothing to fork yet: this session has no turn", "warning")]
    try:
        host.recorder.reconcile()
        await host.recorder.flush()
        original, fork = await fork_session(host.store, host.agent.session_id)
    except StoreError as exc:
        return [Note(str(exc), "error")]
    return [
        Note(
            f"forked {original.id} after turn {fork.turns} into {fork.id}; this is the fork now "
            f"(/resume {original.id} goes back)"
        ),
        ResumeSession(fork.id),
    ]


async def export(host: Host, rest: str) -> list[Reply]:
    """``/export claude [--force]``: this session as a Claude Code session file (written in the
    person's Claude Code folder, so only when asked by name)."""
    from monkey.session.claude_export import export_claude
    from monkey.store import StoreError

    words = rest.split()
    if not words or words[0] != "claude" or words[1:] not in ([], ["--force"]):
        return [
            Note(
                "usage: /export claude [--force] (monkey sessions export ID --format jsonl|markdown "
                "gives the events or a transcript)",
                "warning",
            )
        ]
    if host.working:
        return [Note(BUSY, "warning")]
    if host.store is None or host.recorder is None:
        return [Note("the session store is not open", "error")]
    if not host.agent.started:
        return [Note("nothing to export yet: this session has no turn", "warning")]
    try:
        host.recorder.reconcile()
        await host.recorder.flush()
        done = await export_claude(host.store, host.agent.session_id, force=bool(words[1:]))
    except StoreError as exc:
        return [Note(str(exc), "warning")]
    lines = [
        f"wrote {done.records} records to {done.path}",
        *(f"note: {n}" for n in done.notes),
        f"continue it in Claude Code with: claude --resume {done.uuid}",
    ]
    return [Note("\n".join(lines))]
