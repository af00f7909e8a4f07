"""The gate an external agent's tool calls pass before they run (Claude Code, Codex).

An external agent (Claude Code with ``--permission-prompt-tool stdio``, ``codex
app-server``) asks before it runs a tool. Its backend turns the question into a
:class:`GateCall` in monkey's tool vocabulary (``shell_execute`` with a ``command``,
``file_write`` / ``file_edit`` with a ``path``, a read tool, or the agent's own tool name
when monkey has no such tool) and asks the :class:`ToolGate` the agent loop passed to its
``stream`` for this run (:class:`~monkey.backends.base.ExternalAgent`). The loop decides with its one permission
engine and approver, so the rules,
modes, grants, protected paths and the person's dialog are the same as for monkey's own
tools. The backend answers the agent with the decision, and calls :meth:`ToolGate.done`
once the agent reports the call's result (the loop closes the call's checkpoint then).

This module names what the backends use; :mod:`monkey.permissions.external_gate` implements it
(the backends never import the agent layer).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["GateAnswer", "GateCall", "GateRan", "ToolGate", "READ_TOOLS", "REFUSED_WITHOUT_GATE", "workspace_relative"]

READ_TOOLS = frozenset({"file_read", "list_directory", "glob_search", "grep_search"})
"""monkey's tools that only read: a deny rule may refuse them, nothing else asks."""

REFUSED_WITHOUT_GATE = "monkey has no approval gate for this run, so it refuses every tool call"


@dataclass(frozen=True)
class GateCall:
    """One tool call an external agent proposes, before it runs."""

    call_id: str
    """The agent's id of the call (Claude Code's ``tool_use_id``, Codex's item id): the id its
    ``tool_call`` and ``tool_result`` events carry."""
    agent_tool: str
    """The agent's own name of the tool (``Bash``, ``Write``, ``commandExecution``)."""
    tool: str
    """monkey's name for what it does (``shell_execute``, ``file_write``, ``file_edit``, a read
    tool), or the agent's name when monkey has none (then a person is asked)."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """In monkey's vocabulary: ``command`` for a shell line, ``path`` (workspace-relative when
    inside it) for a file tool; the agent's input as is for a tool monkey does not know."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The agent's own input, unchanged (sent back as ``updatedInput`` when allowed)."""
    reason: str = ""
    """What the agent said about why it asks (shown to the person), if anything."""
    runner: int = 0
    """The pid of the agent that runs this ``shell_execute`` itself once allowed (an ACP agent's ``execute``):
    the command gets a checkpoint of its own, its writes told by the agent's children (0: none)."""


@dataclass(frozen=True)
class GateAnswer:
    """monkey's decision on a :class:`GateCall`."""

    allow: bool
    message: str = ""
    """Why, in words the agent's model reads (for a denial: what it must not do)."""
    stop: bool = False
    """The person asked to stop the turn: the agent should stop, not go on without the call."""


@dataclass(frozen=True)
class GateRan:
    """How a call monkey ran for the agent (:meth:`ToolGate.run`: an ACP terminal's command) ended."""

    ran: bool
    """Whether it started (False: refused before it ran; :attr:`output` says why)."""
    ok: bool
    output: str
    """The call's result as monkey's pipeline gives it (capped, with its exit marker)."""
    exit_code: int | None = None
    signal: str | None = None
    stop: bool = False
    """The person asked to stop the turn."""


class ToolGate(Protocol):
    """What the agent loop gives an external backend for one turn (see :mod:`monkey.permissions.external_gate`)."""

    async def decide(self, call: GateCall) -> GateAnswer:
        """Decide ``call`` with monkey's engine (and, when it asks, a person); may wait for them."""
        ...

    async def done(self, call_id: str, ok: bool) -> None:
        """The agent reported the result of an allowed call: close what was opened for it."""
        ...

    @property
    def output_limit(self) -> int:
        """Characters of a command's output monkey keeps (its shell settings' cap)."""
        ...

    async def run(
        self, call: GateCall, *, covered: str = "", output: Callable[[str], None], started: Callable[[], None]
    ) -> GateRan:
        """Run ``call`` (``shell_execute``) for the agent through monkey's one call pipeline: decided (unless
        ``covered`` names an allowed call of this turn that asked for exactly this command), sandboxed,
        checkpointed, run and journaled. ``output`` gets its output as it comes, ``started`` is called
        when it starts running; cancelled, its processes are stopped."""
        ...


def workspace_relative(raw: Any, workspace: Path) -> str:
    """A path an agent CLI sent (absolute, or relative to the workspace), relative to the
    workspace when inside it, else absolute; ``""`` for none."""
    text = str(raw or "")
    if not text:
        return ""
    path = Path(os.path.normpath(text if text.startswith("/") else workspace / text))
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."
