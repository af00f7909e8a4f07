"""The base of every event and the small records events carry (tool calls, images, instruction
files, a sub-agent's handoff), and the event types :mod:`monkey.events` has no room for (sub-agents,
modes and plans, workflow stages: it would be over the module size limit): a leaf below
:mod:`monkey.events`, which re-exports them."""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

__all__ = [
    "ConversationCleared",
    "Diagnostic",
    "DiagnosticsReported",
    "EndReason",
    "Event",
    "Handoff",
    "InstructionRef",
    "ModeChanged",
    "PlanSaved",
    "StageCompleted",
    "StageStarted",
    "SubagentCompleted",
    "SubagentStarted",
    "ToolCallSpec",
    "ToolImage",
]

EndReason = Literal["completed", "max_iterations", "cancelled", "error", "denied", "budget"]
"""Why a turn or a session ended."""


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event: a ``type`` tag, a wall-clock ``ts`` and the ``session_id``."""

    ts: float = msgspec.field(default_factory=time.time)
    """Seconds since the epoch when the event was made."""
    session_id: str = ""
    """The monkey session this event belongs to."""
    parent_call_id: str | msgspec.UnsetType = msgspec.UNSET
    """On a sub-agent's events: the parent's ``task`` call that runs the sub-agent (see
    :class:`~monkey.events.SubagentStarted`). Absent from every other event (not written on the wire)."""

    @property
    def type(self) -> str:
        """The event's tag, as written on the wire."""
        return self.__struct_config__.tag  # type: ignore[return-value]


class ToolCallSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call as the model asked for it."""

    id: str
    name: str
    arguments: dict[str, Any] = {}
    error: str = ""
    """Why the call cannot run as the model wrote it (e.g. arguments that are not JSON);
    the loop gives this back to the model as the call's result."""


class ToolImage(msgspec.Struct, frozen=True, kw_only=True):
    """An image a tool gave back (an MCP tool's image block), for backends that take images."""

    media_type: str
    """``image/png``, ``image/jpeg`` ..."""
    data: str
    """The image, base64-encoded."""


class InstructionRef(msgspec.Struct, frozen=True, kw_only=True):
    """One instruction file (``AGENTS.md``...) the model was given, by content hash."""

    path: str
    """As shown: relative to the repository, or ``~monkey/...`` for the user's own."""
    sha256: str
    bytes: int = 0


class Handoff(msgspec.Struct, frozen=True, kw_only=True):
    """What a sub-agent hands back to its parent (seed 004): the parent's model reads it as text."""

    agent: str
    session_id: str
    """The child's session (``monkey sessions show ID``)."""
    summary: str = ""
    """The child's final answer."""
    key_outputs: list[str] = []
    """One line per tool call that worked (``name: first line of its result``), the last few."""
    files_changed: list[str] = []
    turns: int = 0
    """Model responses the child (and its own children) used."""
    cost_usd: float = 0.0
    completed: bool = False
    reason: str = ""
    """How the child's turn ended (``completed``, ``budget``, ``error`` ...)."""
    message: str = ""
    """Why, when it did not complete."""
    worktree: str = ""
    """The git worktree the child worked in (``isolation: worktree``) and left for the person ('': none, or
    removed because the child changed nothing); ``files_changed`` are relative to the child's folder in it
    (the one the parent's workspace is in its checkout)."""
    branch: str = ""
    """That worktree's branch."""


class ConversationCleared(Event, frozen=True, kw_only=True, tag="conversation_cleared"):
    """``/clear``: the conversation starts afresh in the same session. What came before stays in
    the store and is never sent to the model again (a resume or a fork after it starts here)."""

    messages: int = 0
    """How many messages the model would have been sent that the clear took away."""


class Diagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """One error or warning a language server reported (see :mod:`monkey.lsp`)."""

    line: int
    """1-based."""
    column: int
    """1-based."""
    severity: Literal["error", "warning"]
    message: str
    code: str = ""
    """The rule or error code (``F401``), if the server gave one."""
    source: str = ""
    """The tool that found it (``Ruff``), if the server said."""


class DiagnosticsReported(Event, frozen=True, kw_only=True, tag="diagnostics_reported"):
    """After a ``file_write`` or ``file_edit``: what the file's language server newly reports (the
    model reads the same, added to the call's result), or why it said nothing (``note``)."""

    call_id: str
    path: str
    """The file, relative to the workspace."""
    server: str
    """The ``[lsp.NAME]`` that checked it."""
    diagnostics: list[Diagnostic] = []
    """The errors and warnings the change added (those it only moved are not repeated)."""
    note: str = ""
    """Why the server was skipped (it did not start, exited, or did not answer in time)."""


class SubagentStarted(Event, frozen=True, kw_only=True, tag="subagent_started"):
    """A ``task`` call (``call_id``, of this session) started a sub-agent in session ``child_session_id``.

    The child's own events follow in the same stream with the child's ``session_id``; this event
    ties that session to the parent's call."""

    call_id: str
    child_session_id: str
    agent: str
    description: str = ""
    depth: int = 1
    """1 for a child of the session the person talks to, 2 for a grandchild ..."""
    background: bool = False
    """Started with ``background``: the ``task`` call returned at once; the handoff reaches the
    parent's model in a message when the child ends."""


class SubagentCompleted(Event, frozen=True, kw_only=True, tag="subagent_completed"):
    """A sub-agent ended; ``handoff`` is what its parent's ``task`` call returns."""

    call_id: str
    child_session_id: str
    handoff: Handoff


class ModeChanged(Event, frozen=True, kw_only=True, tag="mode_changed"):
    """The permission mode changed (``/mode``, Shift+Tab, ``/plan``, an approved plan); a resumed
    session goes on in the last one stored."""

    mode: str
    previous: str = ""
    by: str = "user"
    """``user`` (a command or key), ``plan`` (an approved plan), ``workflow`` (a stage) or ``web`` (monkey web)."""


class PlanSaved(Event, frozen=True, kw_only=True, tag="plan_saved"):
    """The model proposed a plan with ``exit_plan_mode`` and it was decided: the plan, kept with the session."""

    call_id: str
    plan: str
    """The plan as the model wrote it (Markdown)."""
    outcome: Literal["approved", "sent_back", "rejected", "recorded"]
    """``recorded``: nobody could approve it (headless), so the session stays in plan mode."""
    mode: str = ""
    """The mode an approved plan goes on in."""
    feedback: str = ""
    path: str = ""
    """Where the person also kept it in the project (``.monkey/plans/...``), if they did."""


class StageStarted(Event, frozen=True, kw_only=True, tag="stage_started"):
    """A stage of a workflow (``think``, ``plan``, ``do``, ``reflect``) began."""

    workflow_id: str
    stage: str
    iteration: int = 1


class StageCompleted(Event, frozen=True, kw_only=True, tag="stage_completed"):
    """A stage of a workflow ended: what it cost and what came of it."""

    workflow_id: str
    stage: str
    iteration: int = 1
    outcome: str = "completed"
    """How the stage's turn ended (``completed``, ``error``, ``cancelled``, ``budget``...)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    verdict: str = ""
    """Reflect's: ``done`` or ``not_done`` (empty for the other stages)."""
    reason: str = ""
    """Reflect's reason for its verdict, or why a stage failed."""
    handoff: dict[str, Any] = {}
    """What the stage hands the next one (:class:`monkey.workflow.handoff.Handoff` as JSON)."""
