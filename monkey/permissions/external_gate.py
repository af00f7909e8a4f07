"""Claude Code's and Codex's own tool calls through monkey's one permission engine.

The agent passes an external backend one :class:`ExternalGate` per model call, as the ``gate``
argument of its ``stream`` (it is the :class:`~monkey.backends.gate.ToolGate` the backend asks;
see :mod:`monkey.agent.model_call`). A call arrives in monkey's
vocabulary (:class:`~monkey.backends.gate.GateCall`) and goes through the agent's one call
pipeline (:class:`CallPath`, given to the gate: its pre-hook, then
:func:`~monkey.permissions.decide.decide` and a person where it asks, then the checkpoint),
exactly as monkey's own calls do; only the run is the agent's:

- a read tool (``file_read``, the searches) runs unless a deny rule covers it, as monkey's own;
- ``shell_execute`` and the file tools go to :class:`~monkey.permissions.policy.ApprovalPolicy`
  (deny rules, mode, grants, allow rules, the protected set) and, when nothing decides, to
  the :class:`~monkey.permissions.requests.Approver` of this session (the app's dialog, the
  terminal's prompt, the headless refusal), with ``approval_requested`` /
  ``approval_resolved`` events stored before they are shown;
- a file path monkey's own file tools would refuse (``.git/``, ``.monkey/``, outside the
  workspace) needs a person's approval of that exact call, in every mode;
- a tool monkey does not know asks (deny and allow rules may name it by the agent's name).

An allowed file write or edit inside the workspace gets its own checkpoint before it runs,
attributed to the agent's call id, and closed when the agent reports the call's result
(:meth:`done`) or the run ends (:meth:`close`), so ``monkey undo`` reverts exactly that call. So does
an allowed shell command the agent runs itself (an ACP agent's ``execute``: :attr:`GateCall.runner`):
a whole-tree checkpoint whose write-watch window claims the agent's children, not the agent itself.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from monkey.backends.gate import READ_TOOLS, GateAnswer, GateCall, GateRan
from monkey.events import Event, ToolCallSpec, ToolOutput, ToolResult, ToolStarted
from monkey.permissions.decide import Admitted, HookSays
from monkey.permissions.rules import FILE_TOOLS, SHELL_TOOL
from monkey.tools.base import ShellSettings, Tool, ToolContext, ToolError
from monkey.tools.registry import ToolRegistry
from monkey.tools.workspace import relative, resolve_path

__all__ = ["CallPath", "ExternalGate"]

Emit = Callable[[Event], None]


class CallPath(Protocol):
    """The stages of the agent's call pipeline a call the agent runs itself passes
    (:class:`monkey.agent.calls.CallPipeline`, named here by what is used: the engine never imports the loop)."""

    session_id: str
    workspace: Path
    tools: ToolRegistry
    shell: ShellSettings

    async def pre_hook(self, call: ToolCallSpec, emit: Emit) -> HookSays | None:
        """The ``PreToolUse`` hooks' word on the call (None: no hook)."""
        ...

    async def admit(
        self,
        call: ToolCallSpec,
        emit: Emit,
        *,
        dangerous: bool = True,
        paths: list[str] | None = None,
        hook: HookSays | None = None,
        by_person: bool = False,
        person_only: str = "",
        unsandboxed: bool = False,
        protects: Callable[[], str | None] | None = None,
        preview: Callable[[], str] | None = None,
    ) -> Admitted:
        """The engine's verdict, a person asked where it says so, the approval events."""
        ...

    async def begin(self, call: ToolCallSpec, paths: list[str] | None, turn: int, emit: Emit) -> Any:
        """Checkpoint and a pending journal entry before the change (raises ToolError when it cannot)."""
        ...

    async def finish(self, pending: Any, ok: bool, emit: Emit) -> None:
        """Complete the journal entry once the change ran."""
        ...

    def claim(self, pending: Any, pid: int) -> None:
        """The agent ``pid`` runs the change's command itself: its children's writes are the change's."""
        ...

    async def run(self, call: ToolCallSpec, turn: int, emit: Emit, *, admitted: Admitted | None = None) -> Any:
        """The whole path of a call monkey runs itself (a ``CallOutcome``); ``admitted``: decided already."""
        ...


class ExternalGate:
    """Decides an external agent's tool calls for one turn (see the module's docstring)."""

    def __init__(self, calls: CallPath, *, turn: int, emit: Emit, checkpoints: bool = True) -> None:
        self.calls = calls
        """The agent's call pipeline (its policy, approver, hooks and checkpoint guard)."""
        self.turn = turn
        self.emit = emit
        self.checkpoints = checkpoints
        """Whether an allowed write gets a checkpoint of its own (False: the session keeps none)."""
        self._open: dict[str, list[Any]] = {}
        """Checkpoints of allowed calls whose result has not come yet, by call id (a Codex patch
        touching several files is decided path by path under one id)."""
        self._commands: dict[str, tuple[str, Admitted]] = {}
        """Allowed shell calls of this turn by call id: the command line and how it was admitted (an ACP
        agent may then run exactly that line in a terminal monkey runs: :meth:`run`)."""

    async def decide(self, call: GateCall) -> GateAnswer:
        """monkey's decision on one of the agent's calls (a person may be asked)."""
        calls = self.calls
        spec = ToolCallSpec(id=call.call_id or f"ext-{id(call)}", name=call.tool, arguments=call.arguments)
        hook = await calls.pre_hook(spec, self.emit)
        tool = calls.tools.find(call.tool) if call.tool == SHELL_TOOL or call.tool in FILE_TOOLS else None
        ctx = ToolContext(workspace=calls.workspace, call_id=spec.id, shell=calls.shell)
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
                target = resolve_path(calls.workspace, str(call.arguments.get("path") or ""), for_write=True)
                paths = [relative(calls.workspace, target)]
            except ToolError as exc:
                refused = str(exc)
        admitted = await calls.admit(
            spec,
            self.emit,
            dangerous=call.tool not in READ_TOOLS,
            paths=paths or None,
            hook=hook,
            person_only=refused,
            unsandboxed=call.tool == SHELL_TOOL,
            protects=_protects(tool, args),
            preview=_preview(tool, args, ctx),
        )
        decision = admitted.decision
        if admitted.route == "hook":
            return GateAnswer(False, admitted.said)
        if not decision.approved:
            return GateAnswer(False, f"denied by monkey: {decision.reason or 'no reason given'}", stop=decision.stop)
        if admitted.route == "read":
            return GateAnswer(True, "a read")
        if call.tool == SHELL_TOOL and call.call_id:
            self._commands[call.call_id] = (str(call.arguments.get("command", "")), admitted)
        own = call.tool == SHELL_TOOL and call.runner > 0  # an agent's own command: a whole-tree checkpoint
        if (paths or own) and self.checkpoints and call.call_id:
            try:
                pending = await calls.begin(
                    ToolCallSpec(id=call.call_id, name=call.agent_tool, arguments=call.arguments),
                    paths or None,
                    self.turn,
                    self.emit,
                )
            except ToolError as exc:
                return GateAnswer(False, f"not run: {exc}")
            if own:
                calls.claim(pending, call.runner)
            self._open.setdefault(call.call_id, []).append(pending)
        return GateAnswer(True, decision.reason)

    async def done(self, call_id: str, ok: bool) -> None:
        """The agent reported the call's result: its checkpoint records what changed."""
        for pending in self._open.pop(call_id, []):
            await asyncio.shield(self.calls.finish(pending, ok, self.emit))

    @property
    def output_limit(self) -> int:
        return self.calls.shell.output_limit

    async def run(
        self, call: GateCall, *, covered: str = "", output: Callable[[str], None], started: Callable[[], None]
    ) -> GateRan:
        """Run a ``shell_execute`` call for the agent through the whole pipeline (see
        :meth:`~monkey.backends.gate.ToolGate.run`); an allowed request ``covered`` of exactly this
        command line is not decided again."""
        spec = ToolCallSpec(id=call.call_id, name=call.tool, arguments=call.arguments)
        if covered:  # run here, checkpointed by the pipeline: the agent's own command's is closed before
            await self.done(covered, True)
        prior = self._commands.pop(covered, None) if covered else None
        admitted = prior[1] if prior is not None and prior[0] == call.arguments.get("command") else None
        began = False

        def emit(event: Event) -> None:
            nonlocal began
            if getattr(event, "call_id", None) == spec.id:
                if isinstance(event, ToolOutput):
                    output(event.text)
                elif isinstance(event, ToolStarted):
                    began = True
                    started()
            self.emit(event)

        try:
            outcome = await self.calls.run(spec, self.turn, emit, admitted=admitted)
        except asyncio.CancelledError:  # killed: the group is stopped; its result is said
            if began:
                self.emit(
                    ToolResult(
                        session_id=self.calls.session_id,
                        call_id=spec.id,
                        name=spec.name,
                        ok=False,
                        output="[killed at the agent's request]",
                    )
                )
            raise
        message = outcome.message
        code, sig = _exit_status(message.content) if began else (None, None)
        return GateRan(
            ran=began,
            ok=not message.is_error,
            output=message.content,
            exit_code=code,
            signal=sig,
            stop=outcome.stop is not None,
        )

    async def close(self) -> None:
        """The run ended: close the checkpoints of calls whose result never came."""
        while self._open:
            call_id = next(iter(self._open))
            await self.done(call_id, True)  # it may have run: what changed is recorded either way


_EXIT = re.compile(r"\[exit code (\d+)\]|\[killed by (\w+)\]|\[(timed out) after ")


def _exit_status(output: str) -> tuple[int | None, str | None]:
    """The exit code or signal the shell tool's last marker in ``output`` says (what follows may be a hook's)."""
    found = list(_EXIT.finditer(output))
    if not found:
        return None, None
    code, sig, timed_out = found[-1].groups()
    if code is not None:
        return int(code), None
    return None, "SIGTERM" if timed_out else sig


def _protects(tool: Tool | None, args: object) -> Callable[[], str | None]:
    """Why monkey's own tool needs a person for this call, when it can tell (the agent's shape: it cannot)."""
    return lambda: tool.needs_person(args) if tool is not None and args is not None else None


def _preview(tool: Tool | None, args: object, ctx: ToolContext) -> Callable[[], str]:
    """What the approval shows: monkey's tool's diff when it can tell, the agent's input otherwise."""

    def preview() -> str:
        if tool is None or args is None:
            return ""
        try:
            return tool.preview(args, ctx)
        except ToolError:
            return ""  # the agent's own edit may still apply: the dialog shows the call

    return preview
