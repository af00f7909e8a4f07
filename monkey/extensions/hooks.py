"""Hooks: the person's commands (their own config's; never a project's) run at points of a session, in Claude
Code's schema and event names, so existing hook scripts work.

Configured per event name (``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``,
``UserPromptSubmit``, ``Stop``, ``SubagentStart``, ``SubagentStop``, ``SessionStart``,
``SessionEnd``, ``PreCompact``, ``Notification``) as groups of a ``matcher`` (a regular
expression on the tool name, or on ``source`` for ``SessionStart`` (``startup`` /
``resume`` / ``clear`` / ``compact``), ``trigger`` for ``PreCompact`` (``manual`` /
``auto``), ``notification_type`` for ``Notification`` (``permission_prompt``), the agent's
name for ``SubagentStart`` / ``SubagentStop``; empty matches every one) and commands with a
``timeout``::

    [[hooks.PreToolUse]]
    matcher = "shell_execute|file_write"
    hooks = [{ type = "command", command = "./scripts/check.sh", timeout = 30 }]

A command runs through ``sh -c`` in the workspace with a scrubbed environment (plus
``MONKEY_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR``), in the sandbox the model's commands run in
(:mod:`monkey.tools.sandbox`; its inputs are in the workspace the model writes) unless the
person's own config says ``[shell] trusted_commands = "outside"``, and gets JSON on stdin: ``session_id``,
``cwd``, ``hook_event_name``, ``tool_name`` and ``tool_input`` (or ``prompt``). What it says:

- exit 0: go on; JSON on stdout may carry ``permissionDecision`` (``allow`` / ``deny`` /
  ``ask``, with ``permissionDecisionReason``), ``updatedInput``, ``additionalContext`` (at the
  top level or in ``hookSpecificOutput``), or ``decision: "block"`` with a ``reason``;
- exit 2: block; its stderr goes to the model (or to the person, for a prompt);
- any other exit, a timeout, or JSON that cannot be read: a warning, and monkey goes on;
- a command that cannot start (exit 126 / 127 from the shell: not found, not executable) is
  reported as that, never taken for a deliberate block.

A sub-agent runs ``SubagentStart`` instead of ``SessionStart`` and ``SubagentStop`` (which may
send it back to work, like ``Stop``) instead of ``Stop``; its tool calls run the tool hooks.
``SessionStart``'s ``additionalContext`` (or its plain stdout) goes to the model with the first
prompt (after ``/clear``, with the next one; after a compaction, with the summary);
``SessionEnd`` (with ``reason``), ``PreCompact`` and ``Notification`` (with ``message``,
before monkey asks the person) are for the person's own tools and cannot block.

The decisions go through the permission engine (see the loop): a hook's ``allow`` never
overrides a deny rule or the protected set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from monkey.tools.sandbox import Sandbox

__all__ = ["HOOK_EVENTS", "HookCommand", "HookGroup", "HookRun", "HookResult", "Hooks", "MAX_STOP_BLOCKS"]

HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
)
"""The events hooks run at."""
MATCHED = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SessionStart",
        "PreCompact",
        "Notification",
        "SubagentStart",
        "SubagentStop",
    }
)
"""The events whose groups' ``matcher`` is checked (against the tool, source, trigger, type or agent)."""
MAX_STOP_BLOCKS = 3
"""How many times a turn's ``Stop`` hooks may send the model back to work."""
_OUTPUT_LIMIT = 64 * 1024

Outcome = Literal["ok", "allow", "deny", "ask", "block", "warning", "not_started", "timeout"]


@dataclass(frozen=True)
class HookCommand:
    command: str
    timeout: float = 60.0


@dataclass(frozen=True)
class HookGroup:
    matcher: str
    commands: tuple[HookCommand, ...]

    def matches(self, tool: str) -> bool:
        if not self.matcher or self.matcher == "*":
            return True
        try:
            return re.fullmatch(self.matcher, tool) is not None
        except re.error:
            return self.matcher == tool


@dataclass
class HookRun:
    """One command's run: what it said, for the ``hook_ran`` event."""

    event: str
    command: str
    outcome: Outcome
    exit_code: int | None
    duration_ms: float
    message: str = ""


@dataclass
class HookResult:
    """What the hooks of one event decided together."""

    runs: list[HookRun] = field(default_factory=list)
    decision: Literal["", "allow", "deny", "ask"] = ""
    reason: str = ""
    blocked: bool = False
    """Exit 2 or ``decision: block``: the prompt is refused, the tool's result gets ``feedback``,
    the model goes back to work (Stop)."""
    feedback: str = ""
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    """``additionalContext`` lines for the model."""


def parse_hooks(config: dict[str, Any]) -> dict[str, list[HookGroup]]:
    """The ``[hooks]`` table as groups per event (raises ``ValueError`` saying what is wrong)."""
    out: dict[str, list[HookGroup]] = {}
    for event, groups in config.items():
        if event not in HOOK_EVENTS:
            raise ValueError(f"hooks: unknown event {event!r} (known: {', '.join(HOOK_EVENTS)})")
        if not isinstance(groups, list):
            raise ValueError(f"hooks.{event}: expected a list of {{matcher, hooks}} tables")
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise ValueError(f'hooks.{event}: each entry needs hooks = [{{type = "command", command = ...}}]')
            commands = []
            for hook in group.get("hooks", []):
                if (
                    not isinstance(hook, dict)
                    or hook.get("type", "command") != "command"
                    or not isinstance(hook.get("command"), str)
                    or not hook["command"].strip()
                ):
                    raise ValueError(f'hooks.{event}: a hook needs type = "command" and a command')
                timeout = hook.get("timeout", 60)
                if not isinstance(timeout, (int, float)) or timeout <= 0:
                    raise ValueError(f"hooks.{event}: timeout must be a positive number of seconds")
                commands.append(HookCommand(hook["command"], float(timeout)))
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                raise ValueError(f"hooks.{event}: matcher must be a string")
            out.setdefault(event, []).append(HookGroup(matcher, tuple(commands)))
    return out


class Hooks:
    """The configured hooks of a session and how to run them."""

    def __init__(self, groups: dict[str, list[HookGroup]], workspace: Path, *, sandbox: Sandbox | None = None) -> None:
        self.groups = groups
        self.workspace = workspace
        self.sandbox = sandbox
        """The sandbox the commands run in (None: none, or the person trusts their commands outside it)."""

    def __bool__(self) -> bool:
        return any(self.groups.values())

    def listing(self) -> list[str]:
        """One line per configured command, for ``/hooks``."""
        return [
            f"{event} [{group.matcher or '*'}] {cmd.command} (timeout {cmd.timeout:g}s)"
            for event, groups in self.groups.items()
            for group in groups
            for cmd in group.commands
        ]

    async def run(self, event: str, payload: dict[str, Any], *, tool: str = "") -> HookResult:
        """Run every command of ``event`` whose matcher fits ``tool`` (the tool, or the source,
        trigger or notification type), in order, and combine
        what they said (a deny wins over an ask, an ask over an allow)."""
        result = HookResult()
        for group in self.groups.get(event, []):
            if event in MATCHED and not group.matches(tool):
                continue
            for command in group.commands:
                await self._one(event, command, {**payload, "hook_event_name": event}, result)
        return result

    async def _one(self, event: str, hook: HookCommand, payload: dict[str, Any], result: HookResult) -> None:
        from monkey.process import scrub_env, spawn

        env = {
            **scrub_env(os.environ),
            "MONKEY_PROJECT_DIR": str(self.workspace),
            "CLAUDE_PROJECT_DIR": str(self.workspace),
        }
        argv = ["/bin/sh", "-c", hook.command]
        started = time.perf_counter()

        def done(outcome: Outcome, code: int | None, message: str = "") -> None:
            result.runs.append(
                HookRun(event, hook.command, outcome, code, (time.perf_counter() - started) * 1000, message)
            )

        prepared = self.sandbox.prepare(argv, self.workspace.resolve(), env) if self.sandbox is not None else None
        try:
            try:
                proc = await spawn(
                    prepared.argv if prepared else argv,
                    env=prepared.env if prepared else env,
                    before_exec=prepared.preexec_fn if prepared else None,
                    cwd=self.workspace,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                done("not_started", None, f"could not start: {getattr(exc, 'strerror', None) or exc}")
                return
            await self._finish(event, hook, payload, result, proc, done)
        finally:
            if prepared is not None:
                prepared.cleanup()

    async def _finish(
        self,
        event: str,
        hook: HookCommand,
        payload: dict[str, Any],
        result: HookResult,
        proc: asyncio.subprocess.Process,
        done: Callable[..., None],
    ) -> None:
        try:
            out, err = await asyncio.wait_for(proc.communicate(json.dumps(payload).encode()), hook.timeout)
        except TimeoutError:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            await proc.wait()
            done("timeout", None, f"timed out after {hook.timeout:g}s; going on")
            return
        stdout = out[:_OUTPUT_LIMIT].decode("utf-8", "replace").strip()
        stderr = err[:_OUTPUT_LIMIT].decode("utf-8", "replace").strip()
        code = proc.returncode
        if code in (126, 127):
            done("not_started", code, f"could not start ({stderr.splitlines()[-1] if stderr else 'exit ' + str(code)})")
            return
        if code == 2:
            result.blocked = True
            result.feedback = "\n".join(x for x in (result.feedback, stderr or "blocked by a hook") if x)
            if event == "PreToolUse":
                result.decision, result.reason = "deny", stderr or "blocked by a PreToolUse hook"
            done("block", code, stderr)
            return
        if code != 0:
            done("warning", code, f"exit {code}{': ' + stderr if stderr else ''}; going on")
            return
        said: dict[str, Any] = {}
        if stdout.startswith("{"):
            try:
                loaded = json.loads(stdout)
                said = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                done("warning", code, "its output is not valid JSON; going on")
                return
        self._read(said, result)
        if event == "SessionStart" and stdout and not said:  # plain text on stdout is context, as in Claude Code
            result.context.append(stdout)
        outcome: Outcome = "ok"
        decision = said.get("permissionDecision") or (said.get("hookSpecificOutput") or {}).get("permissionDecision")
        if decision in ("allow", "deny", "ask") and event == "PreToolUse":
            outcome = decision
        elif said.get("decision") == "block":
            outcome = "block"
        done(outcome, code, str(said.get("permissionDecisionReason") or said.get("reason") or ""))

    def _read(self, said: dict[str, Any], result: HookResult) -> None:
        specific = said.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        merged = {**said, **specific}
        decision = merged.get("permissionDecision")
        reason = str(merged.get("permissionDecisionReason") or merged.get("reason") or "")
        rank = {"": 0, "allow": 1, "ask": 2, "deny": 3}
        if decision in ("allow", "deny", "ask") and rank[decision] > rank[result.decision]:
            result.decision, result.reason = decision, reason
        if merged.get("decision") == "block":
            result.blocked = True
            result.feedback = "\n".join(x for x in (result.feedback, reason or "blocked by a hook") if x)
        if isinstance(merged.get("updatedInput"), dict):
            result.updated_input = merged["updatedInput"]
        if isinstance(merged.get("additionalContext"), str) and merged["additionalContext"].strip():
            result.context.append(merged["additionalContext"].strip())
