"""The editor's :class:`~monkey.permissions.requests.Approver`: asks through ``session/request_permission``.

The loop asks only about calls no rule, grant or mode decided, and it still takes the
checkpoint and writes the journal after a yes. Four options: allow once, allow always
(a session grant, as ``a`` in the terminal), reject once and reject always (this approver
then rejects the same kind of call without asking again in this session; the model is told).
A rejection the person just gave stops the turn, as a denial without a reason does in the
terminal. If the turn is cancelled while the question waits, the question is withdrawn.

Sub-agents running side by side may ask at once: the editor is asked one question at a
time, each says which sub-agent asks, and a question that waited behind another is decided
again first (a session grant or a "reject always" given meanwhile may settle it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from monkey.acp.updates import diff_contents, tool_kind, tool_title
from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.permissions.rules import grant_for

__all__ = ["AcpApprover", "OPTIONS"]

OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject for this session", kind="reject_always"),
]
"""What the editor offers; the ids are what it answers with."""


class AcpApprover:
    """Asks the editor about one call at a time."""

    def __init__(self, client: Any, workspace: Path) -> None:
        self.client = client
        """The connection to the editor (``request_permission``)."""
        self.workspace = workspace
        self.session_id = ""
        """The ACP session the questions belong to (set when the session opens)."""
        self.rejected: dict[str, str] = {}
        """Kinds of calls rejected for the session: grant key -> what it covers."""
        self._lock = asyncio.Lock()

    def _tool_call(self, request: ApprovalRequest) -> ToolCallUpdate:
        content: list[Any] = []
        if request.tool in ("file_write", "file_edit", "file_delete"):
            content = diff_contents(self.workspace, request.summary)
        from acp import text_block, tool_content

        asker = f"asked by {request.asker}" if request.asker else ""
        notes = [asker, *request.warnings, f"allow for this session covers: {request.grant}" if request.grant else ""]
        if not content:
            notes.insert(1, request.summary)
        text = "\n".join(n for n in notes if n)
        if text:
            content.append(tool_content(text_block(text)))
        return ToolCallUpdate(
            tool_call_id=request.call_id,
            title=tool_title(request.tool, request.arguments),
            kind=tool_kind(request.tool),
            status="pending",
            content=content or None,
            raw_input=request.arguments,
        )

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Ask the editor; its answer is the person's decision."""
        key, what = grant_for(request.tool, request.arguments)
        async with self._lock:  # one question at a time; an answer given meanwhile may settle this one
            if key in self.rejected:
                return Decision(approved=False, by="user", reason=f"the user rejected {what} for this session")
            decided = request.decided_now()
            if decided is not None:
                return decided
            answer = await self.client.request_permission(
                session_id=self.session_id, options=OPTIONS, tool_call=self._tool_call(request)
            )
        outcome = answer.outcome
        choice = outcome.option_id if isinstance(outcome, AllowedOutcome) else ""
        if request.plan:  # exit_plan_mode: allow once goes on in default, allow always in accept-edits
            from monkey.agent.plan_mode import approve_plan, reject_plan

            if choice in ("allow_once", "allow_always"):
                return approve_plan("default" if choice == "allow_once" else "accept-edits")
            return reject_plan()
        if choice == "allow_once":
            return Decision(approved=True, by="user", reason="approved once")
        if choice == "allow_always" and request.grant:
            return Decision(
                approved=True, scope="session", by="user", reason=f"approved for the session: {request.grant}"
            )
        if choice == "allow_always":  # no grant is possible (a very large file): this call only
            return Decision(
                approved=True, by="user", reason="approved once (this call cannot be granted for the session)"
            )
        if choice == "reject_always":
            self.rejected[key] = what
            return Decision(approved=False, by="user", reason=f"the user rejected {what} for this session", stop=True)
        if choice == "reject_once":
            return Decision(approved=False, by="user", reason="the user rejected the call", stop=True)
        return Decision(approved=False, by="user", reason="the question was cancelled", stop=True)
