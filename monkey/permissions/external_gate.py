"""Claude Code's and Codex's own tool calls through monkey's one permission engine.

The loop hands an external backend one :class:`ExternalGate` per turn (it is the
:class:`~monkey.backends.gate.ToolGate` the backend asks). A call arrives in monkey's
vocabulary (:class:`~monkey.backends.gate.GateCall`) and is decided exactly as the loop
decides its own calls, by the same code (the loop's ``_approve``, given to the gate):

- a read tool (``file_read``, the searches) runs unless a deny rule covers it, as monkey's own;
- ``shell_execute`` and the file tools go to :class:`~monkey.permissions.approval.ApprovalPolicy`
  (deny rules, mode, grants, allow rules, the protected set) and, when nothing decides, to
  the :class:`~monkey.permissions.approval.Approver` of this session (the app's dialog, the
  terminal's prompt, the headless refusal), with ``approval_requested`` /
  ``approval_resolved`` events stored before they are shown;
- a file path monkey's own file tools would refuse (``.git/``, ``.monkey/``, outside the
  workspace) needs a person's approval of that exact call, in every mode;
- a tool monkey does not know asks (deny and allow rules may name it by the agent's name).

An allowed file write or edit inside the workspace gets its own checkpoint before it runs,
attributed to the agent's call id, and closed when the agent reports the call's result
(:meth:`done`) or the run ends (:meth:`close`), so ``monkey undo`` reverts exactly that call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from monkey.permissions.approval import FILE_TOOLS, SHELL_TOOL, ApprovalPolicy, Decision
from monkey.backends.gate import READ_TOOLS, GateAnswer, GateCall
from monkey.events import ApprovalResolved, Event, ToolCallSpec
from monkey.tools.base import ShellSettings, Tool, ToolContext, ToolError
from monkey.tools.registry import ToolRegistry
from monkey.tools.workspace import relative, resolve_path

__all__ = ["ExternalGate"]

Emit = Callable[[Event], None]
Approve = Callable[..., Awaitable[tuple[Decision, float]]]
"""The loop's decision on a dangerous call: ``(call, tool, args, ctx, emit, paths, person_only=..., unsandboxed=...)``."""
Begin = Callable[[ToolCallSpec, list[str], int, Emit], Awaitable[Any]]
Finish = Callable[[Any, bool, Emit], Awaitable[None]]
PreHooks = Callable[[ToolCallSpec], Awaitable[Any]]
"""The loop's PreToolUse hooks for one call: a :class:`~monkey.extensions.hooks.HookResult` or None."""


class _AsAsked:
    """What the approval asks of a tool, for a call the agent runs itself: monkey's tool's diff when it
    can tell (its rules for a call it cannot plan are the agent's own), the agent's input otherwise."""

    def __init__(self, tool: Tool | None, args: object) -> None:
        self.tool = tool
        self.parsed = args

    def preview(self, args: object, ctx: ToolContext) -> str:
        if self.tool is None or self.parsed is None:
            return ""
        try:
            return self.tool.preview(args, ctx)
        except ToolError:
            return ""  # the agent's own edit may still apply: the dialog shows the call

    def needs_person(self, args: object) -> str | None:
        return self.tool.needs_person(args) if self.tool is not None and self.parsed is not None else None


class ExternalGate:
    """Decides an external agent's tool calls for one turn (see the module's docstring)."""

    def __init__(self, *, session_id: str, workspace: Path, policy: ApprovalPolicy, tools: ToolRegistry,
                 shell: ShellSettings, turn: int, emit: Emit, approve: Approve,
                 begin: Begin | None = None, finish: Finish | None = None,
                 hooks: PreHooks | None = None) -> None:
        self.session_id = session_id
        self._hooks = hooks
        """Runs the PreToolUse hooks on a call (named as monkey's tools are: shell_execute, file_write ...)."""
        self.workspace = workspace
        self.policy = policy
        self.tools = tools
        self.shell = shell
        self.turn = turn
        self.emit = emit
        self._approve = approve
        self._begin = begin
        self._finish = finish
        self._open: dict[str, list[Any]] = {}
        """Checkpoints of allowed calls whose result has not come yet, by call id (a Codex patch
        touching several files is decided path by path under one id)."""

    async def decide(self, call: GateCall) -> GateAnswer:
        """monkey's decision on one of the agent's calls (a person may be asked)."""
        spec = ToolCallSpec(id=call.call_id or f"ext-{id(call)}", name=call.tool, arguments=call.arguments)
        hook = await self._hooks(spec) if self._hooks is not None else None
        if hook is not None and hook.decision == "deny":
            self.emit(ApprovalResolved(session_id=self.session_id, call_id=spec.id, name=call.tool, decision="denied",
                                       by="rule", reason=f"denied by a PreToolUse hook: {hook.reason}"))
            return GateAnswer(False, f"denied by a hook: {hook.reason}")
        said = hook.decision if hook is not None else ""
        if call.tool in READ_TOOLS and said != "ask":
            denial = self.policy.denied(call.tool, call.arguments, self.workspace)
            if denial is None:
                return GateAnswer(True, "a read")
            self.emit(ApprovalResolved(session_id=self.session_id, call_id=spec.id, name=call.tool,
                                       decision="denied", by=denial.by, reason=denial.reason))
            return GateAnswer(False, f"denied by monkey: {denial.reason}")
        tool = self.tools.find(call.tool) if call.tool == SHELL_TOOL or call.tool in FILE_TOOLS else None
        ctx = ToolContext(workspace=self.workspace, call_id=spec.id, shell=self.shell)
        args: object = None
        paths: list[str] = []
        refused = ""
        if tool is not None:
            try:
                args = tool.parse(call.arguments)
            except ToolError:
                args = None  # the agent's own shape (MultiEdit, a notebook): the path is what counts
        if call.tool in FILE_TOOLS:
            try:  # what monkey's own file tools refuse (.git/, .monkey/, outside the workspace) needs a person
                target = resolve_path(self.workspace, str(call.arguments.get("path") or ""), for_write=True)
                paths = [relative(self.workspace, target)]
            except ToolError as exc:
                refused = str(exc)

        decision, _ = await self._approve(spec, _AsAsked(tool, args), args, ctx, self.emit, paths or None,
                                          person_only=refused, unsandboxed=call.tool == SHELL_TOOL, hook=said)
        if not decision.approved:
            return GateAnswer(False, f"denied by monkey: {decision.reason or 'no reason given'}", stop=decision.stop)
        if paths and self._begin is not None and call.call_id:
            try:
                self._open.setdefault(call.call_id, []).append(await self._begin(
                    ToolCallSpec(id=call.call_id, name=call.agent_tool, arguments=call.arguments),
                    paths, self.turn, self.emit))
            except ToolError as exc:
                return GateAnswer(False, f"not run: {exc}")
        return GateAnswer(True, decision.reason)

    async def done(self, call_id: str, ok: bool) -> None:
        """The agent reported the call's result: its checkpoint records what changed."""
        for pending in self._open.pop(call_id, []):
            if self._finish is not None:
                await asyncio.shield(self._finish(pending, ok, self.emit))

    async def close(self) -> None:
        """The run ended: close the checkpoints of calls whose result never came."""
        while self._open:
            call_id = next(iter(self._open))
            await self.done(call_id, True)  # it may have run: what changed is recorded either way
