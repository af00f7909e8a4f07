"""What an MCP client's call stands for: its own approval is the person's, within monkey's limits.

A client such as Claude Code asks its user before it calls a tool, so a call that reaches
``monkey serve`` is approved, as a person's would be. monkey still applies what it
promises itself: deny rules and the mode decide first (in the loop, before this is asked),
a shell command runs in the sandbox (the client's approval is not a person's at monkey's
own terminal, so ``by`` is ``policy``), and a call that needs a person's approval of that
exact call (the protected set, a very large file) is asked of the client's user through MCP
elicitation when the client offers it (an accepted form is that person's approval of that
call, as in monkey's own dialog: it runs once, outside the sandbox), and refused with the
reason otherwise: monkey has no person of its own to ask here.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.mcp_server.log import log

__all__ = ["ClientApprover", "REQUEST", "APPROVE_SCHEMA", "client_name"]

REQUEST: ContextVar[Any] = ContextVar("monkey_serve_request", default=None)
"""The SDK's context of the ``tools/call`` being run (set by the handler; the turn's task inherits it)."""

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve this exact call", "default": False}},
    "required": ["approve"],
}
"""The elicitation form: one yes/no field."""


def client_name(ctx: Any) -> str:
    """Who is calling, as the client named itself at ``initialize`` (when it did)."""
    value: Any = ctx
    for attr in ("session", "client_params", "client_info", "name"):
        value = getattr(value, attr, None)
        if value is None:
            break
    if isinstance(value, str) and value.strip():
        return f"the MCP client {' '.join(value.split())[:60]}"
    return "the MCP client"


def _can_ask(ctx: Any) -> bool:
    session = getattr(ctx, "session", None)
    if session is None or not getattr(session, "can_send_request", False):
        return False
    capabilities = getattr(session, "client_capabilities", None)
    return getattr(capabilities, "elicitation", None) is not None


class ClientApprover:
    """The :class:`~monkey.permissions.requests.Approver` of ``monkey serve``."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        ctx = REQUEST.get()
        client = client_name(ctx)
        if not request.person_only:
            return Decision(approved=True, by="policy", reason=f"approved by {client}")
        if _can_ask(ctx):
            return await self._ask(ctx, client, request)
        return Decision(
            approved=False,
            by="policy",
            reason=(
                f"needs a person's approval of this exact call ({request.person_only}); monkey serve has no person "
                f"to ask and {client} offers no elicitation, and its approval does not stand for one here"
            ),
        )

    async def _ask(self, ctx: Any, client: str, request: ApprovalRequest) -> Decision:
        """Ask the client's user, with the call as monkey's dialog shows it."""
        message = (
            f"monkey: {request.tool} needs your approval of this exact call: {request.person_only}.\n\n"
            f"{request.summary}\n\n"
            + (
                "Approved, it runs once more, OUTSIDE monkey's sandbox."
                if request.unsandboxed
                else "Approved, it runs once (a shell command still in monkey's sandbox)."
            )
        )
        try:
            answer = await ctx.session.elicit_form(message, APPROVE_SCHEMA, related_request_id=ctx.request_id)
        except Exception as exc:  # noqa: BLE001 - the client failed to ask: nobody approved
            log(f"asking the client's user failed: {exc}")
            return Decision(
                approved=False,
                by="policy",
                reason=f"needs a person's approval of this exact call ({request.person_only}); "
                f"asking through {client} failed: {exc}",
            )
        if answer.action == "accept" and (answer.content or {}).get("approve") is True:
            return Decision(
                approved=True,
                by="user",
                exact_line=True,
                reason=f"approved by the person through {client} (elicitation)",
            )
        said = {"decline": "declined it", "cancel": "dismissed the question"}.get(answer.action, "did not approve it")
        return Decision(approved=False, by="user", reason=f"the person {said} through {client}")
