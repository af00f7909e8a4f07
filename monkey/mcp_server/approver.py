"""What an MCP client's call stands for: its own approval is the person's, within monkey's limits.

A client such as Claude Code asks its user before it calls a tool, so a call that reaches
``monkey serve`` is approved, as a person's would be. monkey still applies what it
promises itself: deny rules and the mode decide first (in the loop, before this is asked),
a shell command runs in the sandbox (the approval is not a person's at monkey's own
terminal, so ``by`` is ``policy``), and a call that needs a person's approval of that exact
call (the protected set, a very large file) is refused with the reason: monkey has no
person of its own to ask here.
"""

from __future__ import annotations

from monkey.agent.approval import ApprovalRequest, Decision

__all__ = ["ClientApprover"]


class ClientApprover:
    """The :class:`~monkey.agent.approval.Approver` of ``monkey serve``."""

    def __init__(self, client: str = "the MCP client") -> None:
        self.client = client
        """Who approved (named in the reason that is recorded)."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.person_only:
            return Decision(approved=False, by="policy", reason=(
                f"needs a person's approval of this exact call ({request.person_only}); "
                f"monkey serve has no person to ask, and {self.client}'s approval does not stand for one here"))
        return Decision(approved=True, by="policy", reason=f"approved by {self.client}")
