"""Connecting an agent to the session store: a new session, ``--continue`` or ``--resume ID``.

:func:`open_session` runs inside the driver's event loop (the store is async): it opens the
store, loads the session to resume (checking its chains), gives the agent its messages,
turn count and id (and, with ``--budget-scope session``, its budget what the session spent
before), and returns the :class:`Recorder` the driver feeds every event to.
The command line picks the session of ``--resume`` without an id (``monkey agent --resume``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from monkey.agent.loop import Agent
from monkey.extensions.memory import memory_from_events
from monkey.store import Recorder, Restored, SessionInfo, SessionStore, StoreError
from monkey.store.lock import SessionLock, lock_owner
from monkey.store.spent import Spent, session_spent
from monkey.worktrees import Hold, hold

__all__ = [
    "SessionHandle",
    "open_session",
    "session_to_open",
    "describe_restored",
    "format_when",
    "resume_hint",
    "recent_sessions",
]


@dataclass
class SessionHandle:
    """The open store, the recorder of the agent's session, and what resuming found."""

    store: SessionStore
    recorder: Recorder
    restored: Restored | None = None
    notices: list[str] = field(default_factory=list)
    lock: SessionLock | None = None
    """This process's ownership of the session (released by :meth:`close`, or by the kernel)."""
    worktree: Hold | None = None
    """The session's hold on the git worktree it works in (``monkey worktrees rm`` refuses meanwhile)."""

    async def close(self) -> None:
        """Write what is left, release the session and close the store."""
        try:
            await self.recorder.close()
        finally:
            try:
                await self.store.close()
            finally:
                if self.lock is not None:
                    self.lock.release()
                if self.worktree is not None:
                    self.worktree.release()


def format_when(ts: float) -> str:
    """A timestamp as local ``YYYY-MM-DD HH:MM``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def describe_restored(restored: Restored) -> list[str]:
    """What resuming found, for a person: one line, more when the session was damaged."""
    info = restored.info
    n = len(restored.messages)
    lines = [
        f"resumed session {info.id} ({n} message{'' if n == 1 else 's'}, {info.turns} "
        f"turn{'' if info.turns == 1 else 's'}, "
        f"last active {format_when(info.updated)})"
    ]
    if restored.problems:
        lines.append(f"session {info.id} is damaged: " + "; ".join(restored.problems))
    for repair in restored.repairs:
        lines.append(f"session {info.id}: {repair}")
    return lines


async def open_session(
    agent: Agent, *, continue_: bool = False, resume: str | None = None, path: Path | None = None
) -> SessionHandle:
    """Open the store and attach ``agent`` to a new or resumed session.

    Raises:
        StoreError: the database cannot be used, the session is missing, belongs to another
            workspace or is being written by another monkey process.
    """
    store = await SessionStore.open(path)
    lock: SessionLock | None = None
    try:
        restored = None
        info = await _named_session(store, agent.workspace, continue_=continue_, resume=resume)
        lock = _own(store, info.id if info is not None else agent.session_id)
        if info is not None:
            restored = await store.load(info.id)
            _tell_effects(agent, restored)
            agent.session_id = info.id
            agent.messages = list(restored.messages)
            agent.turns = info.turns
            agent.resumed = True
            if agent.backend.capabilities.runs_own_tools:  # Claude Code / Codex: resume their session too
                from monkey.backends.external import agent_session_from_events

                agent.backend.agent_session_id = agent_session_from_events(  # type: ignore[attr-defined]
                    await store.event_lines(info.id), agent.backend.name
                )
            if agent.context is not None:
                agent.context.summaries |= restored.summaries
                agent.context.archive.update(restored.archived)
            agent.memory.entries.update(
                memory_from_events(await store.event_lines(info.id, ("tool_call", "tool_result"))).entries
            )
        if agent.budget.scope == "session":  # the budget counts the session's earlier runs too
            agent.budget.restart(**asdict(await session_spent(store, info.id) if info is not None else Spent()))
        count = agent.context.tokens if agent.context is not None else None
        recorder = Recorder(store, agent.session_id, restored=restored, source=lambda: agent.messages, count=count)
    except BaseException:
        await store.close()
        if lock is not None:
            lock.release()
        raise
    from monkey.config import monkey_home

    handle = SessionHandle(store, recorder, restored, lock=lock, worktree=hold(agent.workspace, monkey_home()))
    if restored is not None:
        handle.notices = (
            describe_restored(restored) + await _mode_restored(store, agent) + await _instructions_changed(store, agent)
        )
    return handle


async def _mode_restored(store: SessionStore, agent: Agent) -> list[str]:
    """Go on in the permission mode the resumed session was left in (plan mode survives a restart),
    unless the command line chose one; a line saying so when it differs from the one configured."""
    from monkey import events as ev
    from monkey.modes import ModeError, parse_mode

    policy = agent.policy
    lines = await store.event_lines(agent.session_id, ("session_started", "mode_changed"))
    last = ""
    for line in reversed(lines):
        try:
            event = ev.decode(line)
        except ev.DecodeError:
            continue
        last = getattr(event, "mode", "") if isinstance(event, (ev.SessionStarted, ev.ModeChanged)) else ""
        if last:
            break
    if not last or last == policy.mode:
        return []
    if policy.mode_pinned:
        return [f"the session was left in {last} mode; going on in {policy.mode} mode, as the command line says"]
    try:
        mode = parse_mode(last)
    except ModeError:
        return []
    if mode == "auto" and not policy.auto_allowed:
        return [
            f"the session was left in auto mode; going on in {policy.mode} mode (--no-approval or --mode auto "
            "starts in auto)"
        ]
    policy.set_mode(mode)
    return [f"going on in {mode} mode, as the session was left (/mode or Shift+Tab switches)"]


async def _instructions_changed(store: SessionStore, agent: Agent) -> list[str]:
    """Lines for the instruction files that changed since the resumed session last started."""
    from monkey import events as ev
    from monkey.extensions.instructions import changes_since

    instructions = agent.options.instructions
    if instructions is None:
        return []
    lines = await store.event_lines(agent.session_id, ("session_started",))
    try:
        last = ev.decode(lines[-1]) if lines else None
    except ev.DecodeError:
        return []
    if not isinstance(last, ev.SessionStarted):
        return []
    before = {ref.path: ref.sha256 for ref in last.instructions}
    return changes_since(before, instructions.files)


def _own(store: SessionStore, session_id: str) -> SessionLock:
    """This process's lock on ``session_id``; :class:`StoreError` when another process owns it."""
    try:
        lock = SessionLock.acquire(store.locks, session_id)
    except OSError as exc:
        raise StoreError(f"cannot lock session {session_id} in {store.locks}: {exc.strerror or exc}") from None
    if lock is None:
        pid = lock_owner(store.locks, session_id)
        raise StoreError(
            f"session {session_id} is open in another monkey process{f' (pid {pid})' if pid else ''}; "
            "nothing was run (wait for it to end, or start a new session)"
        )
    return lock


def _tell_effects(agent: Agent, restored: Restored) -> None:
    """Add to each call that was stopped while it ran what the checkpoint journal knows of its
    effect, in its result (for the model) and in the repairs (for the person)."""
    if not restored.interrupted:
        return
    import msgspec

    from monkey.messages import INTERRUPTED

    known = _journal_of(agent, restored.info.id)
    index = {
        m.tool_call_id: n
        for n, m in enumerate(restored.messages)
        if m.role == "tool" and m.content.startswith(INTERRUPTED)
    }
    for call_id, name in restored.interrupted:
        effect = known.get(call_id) or (
            "the checkpoint journal has no change recorded for it"
            if agent.checkpoints is not None
            else "no checkpoint journal: what it did is unknown"
        )
        n = index.get(call_id)
        if n is not None:
            message = restored.messages[n]
            restored.messages[n] = msgspec.structs.replace(
                message, content=f"{message.content}; {effect}. Check before running it again."
            )
        restored.repairs.append(f"{name} call {call_id} was interrupted and may have run: {effect}")


def _journal_of(agent: Agent, session_id: str) -> dict[str, str]:
    """What the checkpoint journal recorded of each call of ``session_id``, by call id."""
    from monkey.checkpoints.guard import CheckpointGuard

    guard = agent.checkpoints
    if not isinstance(guard, CheckpointGuard):
        return {}
    try:
        entries = guard.journal.entries(guard.key, session_id=session_id)
    except Exception:  # noqa: BLE001 - a damaged journal: say nothing rather than guess
        return {}
    said: dict[str, list[str]] = {}
    for e in entries:
        if not e.call_id:
            continue
        paths = ", ".join(e.paths) or "no files"
        if e.state == "applied":
            text = f"checkpoint {e.id} recorded it changing {paths} (monkey undo reverts it)"
        elif e.state == "undone":
            text = f"checkpoint {e.id} recorded it changing {paths}, since undone"
        elif e.state == "pending":
            text = f"checkpoint {e.id} was taken before it and its change is not recorded yet"
        else:
            text = f"checkpoint {e.id} was taken before it and records no change ({e.state})"
        said.setdefault(e.call_id, []).append(text)
    return {k: "; ".join(v) for k, v in said.items()}


async def _named_session(
    store: SessionStore, workspace: Path, *, continue_: bool, resume: str | None
) -> SessionInfo | None:
    """The session ``--resume ID`` or ``--continue`` names in ``workspace`` (``None``: a new one).

    Raises:
        StoreError: no such session, or it belongs to another workspace.
    """
    if resume:
        info = await store.find(resume)
        if info.workspace != str(workspace):
            raise StoreError(
                f"session {info.id} belongs to {info.workspace}; "
                f"run monkey there (or with --cwd {info.workspace}) to resume it"
            )
        return info
    if continue_:
        latest = await store.latest(str(workspace))
        if latest is None:
            raise StoreError(f"no session to continue in {workspace} (monkey sessions list --all shows them)")
        return latest
    return None


def session_to_open(workspace: Path, *, continue_: bool, resume: str | None) -> str | None:
    """The id of the session ``--continue`` or ``--resume ID`` names, found before a front end starts.

    The app checks this before it draws, so a session that is not there is an error on the
    command line (as with ``--task``) rather than a notice in a session that is not saved.

    Raises:
        StoreError: the database cannot be used, or the session is not there.
    """
    if not (continue_ or resume):
        return None

    async def find() -> str | None:
        async with await SessionStore.open() as store:
            info = await _named_session(store, workspace, continue_=continue_, resume=resume)
            return info.id if info is not None else None

    return asyncio.run(find())


async def _recent(workspace: str, limit: int) -> list[SessionInfo]:
    async with await SessionStore.open() as store:
        return await store.list_sessions(workspace, limit=limit)


def recent_sessions(workspace: Path, limit: int = 10) -> list[SessionInfo]:
    """The workspace's most recently used sessions (outside any event loop)."""
    return asyncio.run(_recent(str(workspace), limit))


async def resume_hint(session_id: str, path: Path | None = None) -> str:
    """How to come back to ``session_id`` (``monkey agent --resume ID``), or '' when nothing of it is stored.

    A session with no turn (opened and quit) has nothing to resume, so it gets no hint.
    """
    if not session_id:
        return ""
    try:
        async with await SessionStore.open(path) as store:
            info = await store.get(session_id)
    except StoreError:
        return ""
    if info is None or info.turns < 1:
        return ""
    return f"resume this session with: monkey agent --resume {info.id}"
