"""The app's :class:`~monkey.permissions.requests.Approver`: asks the person with a modal dialog.

``decide()`` posts an :class:`ApprovalNeeded` carrying a future to the app and awaits it;
the app shows the requests one at a time, in the order asked (:mod:`monkey.ui.approvals`:
sub-agents running at once may ask together), and resolves each future with its answer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import App
from textual.message import Message

if TYPE_CHECKING:  # the permission engine is imported with the first question, after the first frame
    from monkey.permissions.requests import ApprovalRequest, Decision

__all__ = ["TuiApprover", "ApprovalNeeded", "GUARD_SECONDS"]

GUARD_SECONDS = 0.4
"""How long the keyboard must be quiet after a new dialog opens before its answer keys work.
A person typing while the agent works does not see the dialog appear between two keys; what they type next must not answer it."""


class ApprovalNeeded(Message):
    """A tool call waits for the person's decision."""

    def __init__(
        self, request: ApprovalRequest, future: asyncio.Future[Decision], settled: asyncio.Future[None] | None = None
    ) -> None:
        super().__init__()
        self.request = request
        """What to ask about."""
        self.future = future
        """Resolved with the person's :class:`Decision`."""
        self.settled = settled
        """Done once the call that asked has taken its answer and recorded what it grants (None: at once)."""


class TuiApprover:
    """Asks through the app (which shows one request at a time)."""

    def __init__(self) -> None:
        self.app: App | None = None
        """The app to ask through (set by the app when it mounts)."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Post the request to the app and wait for the answer (cancelling the turn withdraws it)."""
        if self.app is None:
            from monkey.permissions.requests import Decision

            return Decision(approved=False, by="policy", reason="no screen to ask on")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Decision] = loop.create_future()
        settled: asyncio.Future[None] = loop.create_future()
        self.app.post_message(ApprovalNeeded(request, future, settled))
        try:
            return await future
        finally:
            if not future.done():
                future.cancel()
            # Called back only when the caller's step ends: the loop records a grant the answer gave
            # (synchronously, on return) before the app looks at the next request.
            loop.call_soon(lambda: None if settled.done() else settled.set_result(None))
