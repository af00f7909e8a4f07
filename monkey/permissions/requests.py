"""What a person is asked and what they answer: requests, decisions, the approver.

:class:`ApprovalRequest` is the exact question a person sees about one call (the command
line with hidden characters shown, or the diff), :class:`Decision` an answer to it (from a
person, a rule, a grant or the mode), :class:`Approver` whoever answers (the app's dialog,
the terminal's prompt, :class:`HeadlessApprover` when nobody is there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from monkey.permissions.rules import EXIT_PLAN_MODE, SHELL_TOOL, grant_for, rules_for
from monkey.safe_text import escape_controls, invisible_warnings
from monkey.tools.command_line import read_line

__all__ = [
    "ApprovalRequest",
    "Approver",
    "Decision",
    "HeadlessApprover",
    "STOP_REASON",
    "build_request",
    "stopped_by_user",
]


@dataclass(frozen=True)
class ApprovalRequest:
    """One dangerous call waiting for a decision, with what a person needs to judge it."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    summary: str
    """The command line (escaped) or the diff the call would apply."""
    warnings: list[str] = field(default_factory=list)
    grant: str = ""
    """What "approve for this session" would cover, in words (empty: only this call may be approved)."""
    rules: list[str] = field(default_factory=list)
    """The rules "always allow" would save to the user's config (empty: not offered)."""
    person_only: str = ""
    """Why only a person's approval of this exact call can let it run (a protected path, a huge file)."""
    unsandboxed: bool = False
    """The second question about a command the sandbox blocked: approved, it runs again outside the
    sandbox (the dialog says so). An approved command otherwise runs in the sandbox."""
    no_sandbox: bool = False
    """In auto mode, asked only because no sandbox can hold commands here."""
    plan: str = ""
    """A plan to review (``exit_plan_mode``): front ends show their plan dialog instead of the approval."""
    asker: str = ""
    """Who asks, when not the session's own agent: a sub-agent, ``explore (sub-agent): find the tests``."""
    session_id: str = ""
    """The session whose call asks (a sub-agent's own), set by the call pipeline; answers given
    elsewhere (``monkey web``) are stored for it (see :mod:`monkey.store.control`)."""
    recheck: Callable[[], Decision | None] | None = field(default=None, compare=False, repr=False)
    """The permission engine's decision on the call as its rules, grants and mode stand now, or None when a
    person must still be asked. An approver that kept the request waiting (behind another one) asks this first:
    a grant given meanwhile may cover it. None: only a person can decide it (a protected path, a hook's ask)."""

    def decided_now(self) -> Decision | None:
        """The engine's decision from :attr:`recheck`, or None: a person decides (also when the check fails)."""
        if self.recheck is None:
            return None
        try:
            return self.recheck()
        except Exception:  # noqa: BLE001 - the person is asked, as without the engine's second look
            return None


@dataclass(frozen=True)
class Decision:
    """An answer to an :class:`ApprovalRequest`."""

    approved: bool
    scope: Literal["once", "session", "always"] = "once"
    """``always``: for the session, and the request's rules saved to the user's config."""
    by: Literal["user", "rule", "session", "policy"] = "user"
    reason: str = ""
    stop: bool = False
    """For a denial: stop the turn instead of telling the model and going on."""
    exact_line: bool = False
    """A person approved this exact shell line (so shell syntax may run through a shell)."""
    mode: str = ""
    """For an approved plan: the mode the session goes on in (empty: ``default``; ``plan``: recorded only)."""
    save: bool = False
    """For an approved plan: also keep it in the project's ``.monkey/plans/``."""


STOP_REASON = "the user stopped the turn"
"""Why a call was refused when the person stopped the turn instead of answering (Esc, Ctrl-C, EOF)."""


def stopped_by_user(reason: str = STOP_REASON) -> Decision:
    """A person's refusal that stops the turn, not only the call."""
    return Decision(approved=False, by="user", reason=reason, stop=True)


class Approver(Protocol):
    """Asks someone (or something) about a call no rule decided."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        """The decision for ``request``; may wait as long as a person needs."""
        ...


class HeadlessApprover:
    """Denies everything a rule did not allow, with a reason the model and user can read.

    A plan (``exit_plan_mode``) is recorded and the session stays in plan mode, unless
    ``approve_plan`` names the mode an approved plan goes on in (``--approve-plan``).
    """

    def __init__(self, approve_plan: str = "") -> None:
        self.approve_plan = approve_plan
        """``default`` or ``accept-edits``: approve every plan and go on in that mode; empty: only record it."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Deny ``request``: nobody is there to ask."""
        if request.plan:
            if self.approve_plan:
                return Decision(
                    approved=True,
                    by="policy",
                    mode=self.approve_plan,
                    reason=f"approved by --approve-plan {self.approve_plan}",
                )
            return Decision(
                approved=True,
                by="policy",
                mode="plan",
                reason="recorded: nobody is here to approve the plan (--approve-plan MODE approves it)",
            )
        return Decision(
            approved=False,
            by="policy",
            reason=(
                f"needs a person's approval of this exact call ({request.person_only}) "
                "and there is no terminal to ask on"
                if request.person_only
                else "needs approval and there is no terminal to ask on: without a sandbox here, every shell "
                "command does, even with --no-approval; allow it with a rule in [approvals] allow"
                if request.no_sandbox
                else "needs approval and there is no terminal to ask on; "
                "allow it with a rule in [approvals] allow, or run with --no-approval"
            ),
        )


def build_request(
    call_id: str, tool: str, arguments: dict[str, Any], preview: str, workspace: Path | None = None
) -> ApprovalRequest:
    """The request a person sees: the exact command with hidden characters shown, or the diff; and what
    "for good" would save (a file tool's rule names the path's folder in ``workspace``)."""
    warnings: list[str] = []
    if tool == SHELL_TOOL:
        command = str(arguments.get("command", ""))
        summary = escape_controls(command, keep_newlines=False, strict=True)
        warnings = invisible_warnings(command)
        construct = read_line(command).construct
        if construct is not None:
            warnings.append(f"runs through a shell ({construct})")
    else:
        summary = escape_controls(preview or f"{tool} {arguments.get('path', '')}", strict=not preview)
        warnings = invisible_warnings(str(arguments.get("path", "")))
    if tool == EXIT_PLAN_MODE:  # a plan is approved once, never for the session or for good
        plan = str(arguments.get("plan", ""))
        hidden = [w for w in invisible_warnings(plan) if "newline" not in w]  # a plan has lines
        return ApprovalRequest(call_id, tool, arguments, escape_controls(plan), hidden, plan=plan or " ")
    _, grant = grant_for(tool, arguments)
    return ApprovalRequest(call_id, tool, arguments, summary, warnings, grant, rules_for(tool, arguments, workspace))
