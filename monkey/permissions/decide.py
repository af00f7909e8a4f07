"""The one verdict on a tool call: :func:`decide`.

Every call from any source — monkey's own tools, MCP and plugin tools, sub-agents (the
``task`` tool), a person's ``!command``, a program's call through ``monkey serve``, and
Claude Code's or Codex's own calls through the external gate — gets its verdict here, once:

- a ``PreToolUse`` hook's ``deny`` refuses it;
- a call that only reads (not ``dangerous``) runs unless a deny rule covers it (a hook's
  ``ask`` sends it to a person like any other);
- otherwise the :class:`~monkey.permissions.policy.ApprovalPolicy` (deny rules, the mode,
  grants, allow rules, read-only commands) decides, and what it cannot decide, or what
  touches the protected set, a file too large to checkpoint, a path monkey's own tools
  refuse, or what a hook wants a person to see, becomes the exact
  :class:`~monkey.permissions.requests.ApprovalRequest` a person is asked.

The verdict carries the shell line it was decided on (:class:`~monkey.tools.command_line.ShellLine`,
read once), which is what runs. :func:`settle` applies a person's answer (an answer for a
protected call holds once; "for the session" becomes a grant).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import ApprovalRequest, Decision, build_request
from monkey.permissions.rules import FILE_TOOLS, SHELL_TOOL
from monkey.tools.command_line import ShellLine, read_line

__all__ = ["Admitted", "Call", "HookSays", "Verdict", "decide", "outside_sandbox", "settle", "source"]


class HookSays(Protocol):
    """What a ``PreToolUse`` hook said about a call (:class:`monkey.extensions.hooks.HookResult`)."""

    decision: Literal["", "allow", "deny", "ask"]
    reason: str


@dataclass(frozen=True)
class Call:
    """One tool call to decide, with what the engine needs to know about it."""

    id: str
    tool: str
    """monkey's name of the tool (``shell_execute``, ``file_write``, ``mcp__server__tool``...)."""
    arguments: dict[str, Any]
    workspace: Path
    dangerous: bool = True
    """False for a tool that only reads: only deny rules (and a hook's ``ask``) apply."""
    protects: Callable[[], str | None] | None = None
    """The tool's own reason only a person may approve this call (a changed MCP tool), if any."""
    preview: Callable[[], str] | None = None
    """What a person is shown besides the call (the diff); made only when a person is asked."""
    oversized: tuple[str, ...] = ()
    """Files too large to checkpoint without a person's approval (one warning each)."""
    by_person: bool = False
    """The person typed the call (``!command``): approved by that, unless a rule denies it."""
    person_only: str = ""
    """Why only a person's approval of this exact call may let it run, besides what the policy finds
    (an external agent's write that monkey's own file tools would refuse)."""
    unsandboxed: bool = False
    """The command will not run in monkey's sandbox (an external agent's own): decided as where there is none."""
    hook: HookSays | None = None
    """What the ``PreToolUse`` hooks said (None: no hook ran)."""
    asker: str = ""
    """Who asks, when not the session's own agent (a sub-agent's name and task)."""


@dataclass(frozen=True)
class Verdict:
    """The engine's final word on a call: a decision, or the exact question for a person."""

    decision: Decision | None
    """The decision (None: ask :attr:`question`)."""
    question: ApprovalRequest | None = None
    route: Literal["hook", "read", "engine"] = "engine"
    """``hook``: a hook refused it; ``read``: a call that only reads (no approval event unless denied);
    ``engine``: decided by the policy or asked (always an approval event)."""
    line: ShellLine | None = None
    """The shell line decided on, read once: what runs."""
    person_only: str = ""
    oversized: tuple[str, ...] = ()
    by_hook: bool = False
    """A ``PreToolUse`` hook's ``allow`` decided it."""

    @property
    def quiet(self) -> bool:
        """A read nobody needed to look at: no ``approval_resolved`` is emitted."""
        return self.route == "read" and self.decision is not None and self.decision.approved


@dataclass(frozen=True)
class Admitted:
    """How a call came through the pipeline's front half (decide, then ask a person if needed)."""

    decision: Decision
    said: str
    """On a denial, what the model (or the external agent) reads."""
    line: ShellLine | None = None
    waited: float = 0.0
    """Seconds a person spent deciding (not part of the call's run time)."""
    route: Literal["hook", "read", "engine"] = "engine"


def decide(policy: ApprovalPolicy, call: Call) -> Verdict:
    """The verdict on ``call`` from hooks, rules, grants, the mode and the protected set."""
    line = read_line(str(call.arguments.get("command", ""))) if call.tool == SHELL_TOOL else None
    said = call.hook.decision if call.hook is not None else ""
    if said == "deny":
        reason = call.hook.reason if call.hook is not None else ""
        return Verdict(
            Decision(approved=False, by="rule", reason=f"denied by a PreToolUse hook: {reason}"),
            route="hook",
            line=line,
        )
    if not call.dangerous and said != "ask":  # deny rules cover reads too
        return Verdict(policy.denied(call.tool, call.arguments, call.workspace) or _READ, route="read", line=line)
    ws = call.workspace
    engine = replace(policy, sandboxed=False) if call.unsandboxed else policy
    decision = engine.check(call.tool, call.arguments, ws)
    if call.by_person and (decision is None or decision.approved):
        decision = Decision(approved=True, by="user", reason="typed by the person", exact_line=True)
    protected = (
        None
        if call.by_person
        else (
            policy.needs_person(call.tool, call.arguments, ws)
            or (call.protects() if call.protects is not None else None)
        )
    )
    person_only = "; ".join(
        [*([protected] if protected else []), *([call.person_only] if call.person_only else []), *call.oversized]
    )
    if person_only and decision is not None and decision.approved:
        decision = None  # a large file, a changed MCP tool, a path monkey's file tools refuse: a person's approval
    if said == "ask" and decision is not None and decision.approved and decision.by != "user":
        decision = None  # a PreToolUse hook wants a person to decide
    elif (
        said == "allow"
        and decision is None
        and not person_only  # never over a deny rule or a protected path,
        and not (line is not None and policy.line_reads_denied(line.text, ws))
    ):  # nor a denied read
        return Verdict(
            Decision(approved=True, by="rule", reason="allowed by a PreToolUse hook"), line=line, by_hook=True
        )
    if decision is not None:
        return Verdict(decision, line=line)
    request = build_request(
        call.id, call.tool, call.arguments, call.preview() if call.preview is not None else "", call.workspace
    )
    if call.tool == SHELL_TOOL:  # approved, it still runs in the sandbox (see outside_sandbox)
        request = replace(request, no_sandbox=engine.mode == "auto" and not engine.sandboxed)
    if call.asker:
        request = replace(request, asker=call.asker)
    if not person_only and said != "ask":  # the engine again, for an approver that kept it waiting
        request = replace(request, recheck=lambda: engine.check(call.tool, call.arguments, ws))
    if person_only:
        request = replace(
            request,
            warnings=[*request.warnings, f"only this call can be approved: {person_only}"],
            grant="",
            rules=[],
            person_only=person_only,
        )
    return Verdict(None, request, line=line, person_only=person_only, oversized=call.oversized)


def outside_sandbox(call: Call, blocked: str) -> Verdict:
    """The second question for a command a person approved and the sandbox then blocked: run it
    again outside the sandbox? Only a person answers it, for this call once (no grant, no rule);
    nobody there (headless) means no."""
    line = read_line(str(call.arguments.get("command", "")))
    why = f"the sandbox blocked it: {blocked}"
    request = build_request(call.id, call.tool, call.arguments, "")
    request = replace(
        request,
        warnings=[
            *request.warnings,
            why,
            "run again OUTSIDE the sandbox: with the network and write access to every file you can write",
        ],
        grant="",
        rules=[],
        person_only=f"a run outside the sandbox ({why})",
        unsandboxed=True,
        asker=call.asker,
    )
    return Verdict(None, request, line=line, person_only=request.person_only)


_SOURCES = {"user": "person", "session": "person", "rule": "rule", "policy": "mode"}


def source(verdict: Verdict, decision: Decision) -> Literal["rule", "person", "mode", "hook"]:
    """What decided a call, as ``approval_resolved`` records it: a ``rule`` (or a read), a ``person``
    (asked now, a grant they gave, a line they typed), the ``mode`` (or nobody there to ask) or a ``hook``."""
    if verdict.route == "hook" or verdict.by_hook:
        return "hook"
    return _SOURCES[decision.by]  # type: ignore[return-value]


def settle(policy: ApprovalPolicy, verdict: Verdict, answer: Decision) -> Decision:
    """A person's ``answer`` to the verdict's question, as it holds: once for a protected call, with
    the large files named in a refusal; "for the session" (or "always", but for a file tool, whose
    "always" holds only for the folder its saved rule names) becomes a session grant."""
    assert verdict.question is not None
    if verdict.person_only and answer.approved:
        answer = replace(answer, scope="once")
    elif verdict.oversized and not answer.approved:
        answer = replace(answer, reason=f"{'; '.join(verdict.oversized)}; {answer.reason}")
    tool = verdict.question.tool
    if answer.approved and (answer.scope == "session" or answer.scope == "always" and tool not in FILE_TOOLS):
        policy.remember(tool, verdict.question.arguments)  # a file tool's "for good": its folder's rule only
    return answer


_READ = Decision(approved=True, by="rule", reason="a read")
"""What a call that only reads gets when no deny rule covers it."""
