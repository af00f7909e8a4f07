"""An approver for in-process tests of the agent loop: it answers from a list."""

from __future__ import annotations

from monkey.permissions.requests import ApprovalRequest, Decision

__all__ = ["AnsweringApprover"]


class AnsweringApprover:
    """Answers approval requests from a list, remembering what it was asked."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        return self.answers.pop(0)
