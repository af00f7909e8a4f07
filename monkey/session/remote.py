"""Approvals answered elsewhere: the session's approver also watches the store for an answer given
in ``monkey web`` (see :mod:`monkey.store.control`), and the first answer wins.

:class:`RemoteAnswers` wraps the front end's approver (the app's dialog, the terminal's prompt, an
editor's, a client's). While its person is asked, the store is read every :data:`POLL_S` for an
answer to the same call; one found there ends the question (the front end is told who answered),
and an answer of the person is stored before it is used, so the browser learns the call was
answered and cannot answer it again. The answer's scope goes through the permission engine as the
person's would (``settle``: a protected call is approved once, never granted).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from monkey.db import DatabaseError
from monkey.permissions.requests import (
    ApprovalRequest,
    Approver,
    Decision,
    stopped_by_user,
)
from monkey.store.control import answer_for, claim_now
from monkey.store.store import StoreError

if TYPE_CHECKING:
    from monkey.store.store import SessionStore

__all__ = ["CHOICES", "POLL_S", "RemoteAnswers", "decision_of"]

POLL_S = 0.1
"""How often the store is read for an answer given elsewhere while a person is asked."""
CHOICES = ("once", "session", "always", "deny")
"""What ``monkey web`` may answer, as the app's dialog offers: allow once, for the session, for good, deny."""
WHERE = {"web": "in the browser", "here": "here"}


def decision_of(answer: dict[str, Any], request: ApprovalRequest) -> tuple[Decision, str]:
    """The decision a stored answer makes for ``request``, and how to tell it. A scope the request
    does not offer (no grant, no rules to save) is taken as once."""
    where = WHERE.get(str(answer.get("by", "")), "elsewhere")
    choice = answer.get("choice", "deny")
    if choice == "deny":
        reason = str(answer.get("reason", "")).strip()
        if not reason:
            return stopped_by_user(f"denied {where}"), f"denied {where}"
        return Decision(approved=False, by="user", reason=f"the user said: {reason}"), f"denied {where}: {reason}"
    if choice == "always" and request.grant and request.rules:
        return (
            Decision(
                approved=True,
                scope="always",
                by="user",
                reason=f"approved for good {where}: {', '.join(request.rules)}",
            ),
            f"approved for good {where}",
        )
    if choice in ("session", "always") and request.grant:
        return (
            Decision(
                approved=True, scope="session", by="user", reason=f"approved for the session {where}: {request.grant}"
            ),
            f"approved for the session {where}",
        )
    return Decision(approved=True, by="user", reason=f"approved once {where}"), f"approved once {where}"


def _answer(decision: Decision) -> dict[str, Any]:
    """A person's decision here as it is stored."""
    if not decision.approved:
        return {"choice": "deny", "reason": decision.reason}
    return {"choice": decision.scope}


class RemoteAnswers:
    """The front end's approver, racing the store for an answer given in ``monkey web``."""

    def __init__(
        self,
        inner: Approver,
        store: Callable[[], SessionStore | None],
        root: Callable[[], str],
        tell: Callable[[str], None],
    ) -> None:
        self.inner = inner
        self._store = store
        self._root = root
        self._tell = tell
        self._sync: sqlite3.Connection | None = None

    def _conn(self, store: SessionStore) -> sqlite3.Connection:
        if self._sync is None:
            from monkey.db import connect

            self._sync = connect(store.path)
        return self._sync

    async def decide(self, request: ApprovalRequest) -> Decision:
        store = self._store()
        if store is None or request.plan or request.unsandboxed:
            # not stored (nothing to watch); a plan is reviewed where it runs; the second question about a
            # command the sandbox blocked (run it outside?) has the call's id too, and must never take the
            # answer stored for the first: only the person there answers it, afresh
            return await self.inner.decide(request)
        root = request.session_id or self._root()  # the session that asks: a sub-agent's own
        try:
            given = await answer_for(store, root, request.call_id)  # answered while it waited its turn
        except StoreError:
            given = None
        if given is not None:
            return self._elsewhere(given, request)
        # The person's approver runs in this task (so the caller records its answer's grant before any other
        # question goes on: approvers ask one at a time and look again first); a watcher reads the store and,
        # finding an answer given elsewhere, cancels the question here.
        me = asyncio.current_task()
        assert me is not None
        found: dict[str, Any] = {}

        async def watch() -> None:
            while True:
                await asyncio.sleep(POLL_S)
                try:
                    answer = await answer_for(store, root, request.call_id)
                except StoreError:
                    continue
                if answer is not None:
                    found.update(answer)
                    me.cancel()
                    return

        watcher = asyncio.ensure_future(watch())
        try:
            decision = await self.inner.decide(request)
        except asyncio.CancelledError:
            if not found:
                raise
            me.uncancel()
            return self._elsewhere(found, request)
        finally:
            watcher.cancel()
        if found:  # the approver answered though its question was cancelled: the stored answer came first
            if me.cancelling():
                me.uncancel()
            return self._elsewhere(found, request)
        if decision.by != "user":  # the engine decided it meanwhile (a grant): nobody answered
            return decision
        try:  # stored at once: the caller records the answer's grant before another question goes on
            held = claim_now(self._conn(store), root, request.call_id, _answer(decision), "here")
        except (sqlite3.Error, DatabaseError):
            return decision
        return decision if held["by"] == "here" else self._elsewhere(held, request)

    def _elsewhere(self, held: dict[str, Any], request: ApprovalRequest) -> Decision:
        decision, said = decision_of(held, request)
        self._tell(f"{request.tool}: {said}")
        return decision
