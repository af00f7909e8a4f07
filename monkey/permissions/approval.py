"""The permission engine's names in one place, for the front ends and tools that use them.

The engine is split by what each part is: :mod:`~monkey.permissions.requests` (what a person
is asked and answers, the ``Approver``), :mod:`~monkey.permissions.rules` (rule strings and
grants), :mod:`~monkey.permissions.policy` (rules, grants and the mode together) and
:mod:`~monkey.permissions.decide` (the one verdict on a call). Importing from here or from
those modules is the same.
"""

from __future__ import annotations

from monkey.permissions.decide import Admitted, Call, Verdict, decide, settle
from monkey.permissions.policy import PLAN_REFUSAL, ApprovalPolicy
from monkey.permissions.requests import (
    STOP_REASON,
    ApprovalRequest,
    Approver,
    Decision,
    HeadlessApprover,
    build_request,
    stopped_by_user,
)
from monkey.permissions.rules import (
    EXIT_PLAN_MODE,
    FILE_TOOLS,
    MCP_PREFIX,
    SHELL_TOOL,
    Rule,
    RuleError,
    grant_for,
    rules_for,
)

__all__ = [
    "Admitted",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "Call",
    "Decision",
    "EXIT_PLAN_MODE",
    "FILE_TOOLS",
    "HeadlessApprover",
    "MCP_PREFIX",
    "PLAN_REFUSAL",
    "Rule",
    "RuleError",
    "SHELL_TOOL",
    "STOP_REASON",
    "Verdict",
    "build_request",
    "decide",
    "grant_for",
    "rules_for",
    "settle",
    "stopped_by_user",
]
