"""Every typed event monkey produces, and their JSON-lines codec.

Events are immutable msgspec structs tagged by a ``type`` string. The tag names are a
public interface: ``monkey agent --output-format stream-json`` prints these objects one
per line, and the store, the TUI's event pane and the exporters all read the same ones.

Nothing in this module imports from higher layers. Backends produce events, the agent
loop consumes and produces them, sinks consume them.

Decoding never raises on well-formed JSON: an object whose ``type`` is unknown, or whose
fields do not fit the known type, becomes a :class:`Raw` event that keeps the original
object, so a newer producer never breaks an older reader.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Literal, Union

import msgspec

__all__ = [
    "Event",
    "SessionStarted",
    "TurnStarted",
    "IterationStarted",
    "TextDelta",
    "ThinkingDelta",
    "MessageCompleted",
    "ToolCallEvent",
    "ApprovalRequested",
    "ApprovalResolved",
    "ToolStarted",
    "ToolOutput",
    "ToolResult",
    "CheckpointCreated",
    "UndoApplied",
    "NotUndoable",
    "InstructionsLoaded",
    "HookRan",
    "InstructionRef",
    "Usage",
    "Retry",
    "Fallback",
    "Error",
    "TurnCompleted",
    "SessionEnded",
    "ContextUsage",
    "ContextCompacted",
    "ContextEdited",
    "ConversationCleared",
    "Diagnostic",
    "DiagnosticsReported",
    "AgentSession",
    "BackendChanged",
    "BudgetReached",
    "Handoff",
    "SubagentStarted",
    "SubagentCompleted",
    "ModeChanged",
    "PlanSaved",
    "StageStarted",
    "StageCompleted",
    "Raw",
    "EndReason",
    "ToolCallSpec",
    "ToolImage",
    "AnyEvent",
    "EVENT_TYPES",
    "encode",
    "encode_line",
    "decode",
    "decode_line",
    "DecodeError",
]

from monkey.event_base import (
    ConversationCleared,
    Diagnostic,
    DiagnosticsReported,
    EndReason,
    Event,  # noqa: E402
    Handoff,
    InstructionRef,
    ModeChanged,
    PlanSaved,
    StageCompleted,
    StageStarted,
    SubagentCompleted,
    SubagentStarted,
    ToolCallSpec,
    ToolImage,
)


class SessionStarted(Event, frozen=True, kw_only=True, tag="session_started"):
    """A session began (or was resumed) in a workspace."""

    workspace: str
    backend: str
    model: str
    resumed: bool = False
    instructions: list[InstructionRef] = []
    """The instruction files in the system prompt (see :mod:`monkey.extensions.instructions`)."""
    mode: str = ""
    """The permission mode the session (re)started in (see :mod:`monkey.modes`)."""


class HookRan(Event, frozen=True, kw_only=True, tag="hook_ran"):
    """A hook command ran (see :mod:`monkey.extensions.hooks`): what it answered."""

    hook_event: str
    command: str
    outcome: str
    """``ok``, ``allow``, ``deny``, ``ask``, ``block``, ``warning``, ``not_started`` or ``timeout``."""
    exit_code: int | None = None
    duration_ms: float = 0.0
    message: str = ""
    call_id: str = ""


class InstructionsLoaded(Event, frozen=True, kw_only=True, tag="instructions_loaded"):
    """Instruction files of a folder below the workspace, given to the model the first time the
    agent touched a path there (with the result of ``call_id``)."""

    files: list[InstructionRef] = []
    call_id: str = ""
    notices: list[str] = []


class TurnStarted(Event, frozen=True, kw_only=True, tag="turn_started"):
    """The user gave the agent a message; the agent works on it until it answers."""

    turn: int
    prompt: str
    images: list[ToolImage] = []
    """Images the person attached to the message (``@shot.png``, an editor's image block)."""


class IterationStarted(Event, frozen=True, kw_only=True, tag="iteration_started"):
    """One model call inside a turn (``iteration`` of ``max_iterations``)."""

    turn: int
    iteration: int
    max_iterations: int


class TextDelta(Event, frozen=True, kw_only=True, tag="text_delta"):
    """A piece of the assistant's visible answer, as it streams."""

    text: str


class ThinkingDelta(Event, frozen=True, kw_only=True, tag="thinking_delta"):
    """A piece of the model's reasoning, as it streams."""

    text: str


class MessageCompleted(Event, frozen=True, kw_only=True, tag="message_completed"):
    """The model finished one message: its whole text and the tool calls it asked for."""

    role: str = "assistant"
    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCallSpec] = []
    stop_reason: str = "end_turn"
    thinking_signature: str = ""
    """The provider's signature of ``thinking`` (Anthropic), needed to send it back."""


class ToolCallEvent(Event, frozen=True, kw_only=True, tag="tool_call"):
    """The loop is about to handle one tool call of the model."""

    call_id: str
    name: str
    arguments: dict[str, Any] = {}
    dangerous: bool = False


class ApprovalRequested(Event, frozen=True, kw_only=True, tag="approval_requested"):
    """A dangerous tool call waits for a decision."""

    call_id: str
    name: str
    arguments: dict[str, Any] = {}
    summary: str = ""
    """What will happen, as a person should read it (a command line, a diff)."""
    warnings: list[str] = []
    """Things the person must notice (control characters, shell syntax...)."""


class ApprovalResolved(Event, frozen=True, kw_only=True, tag="approval_resolved"):
    """The decision on a dangerous tool call."""

    call_id: str
    name: str
    decision: Literal["approved", "approved_session", "approved_always", "denied"]
    """``approved_always``: for the session, and rules saved to the user's config."""
    by: Literal["user", "rule", "session", "policy"]
    reason: str = ""
    source: Literal["", "rule", "person", "mode", "hook"] = ""
    """What decided: a rule (or a read), a person (now or by an earlier grant), the mode (or nobody to ask), a hook."""
    wait_ms: float = 0.0
    """How long the person took to answer, when one was asked (0: nobody was asked)."""


class ToolStarted(Event, frozen=True, kw_only=True, tag="tool_started"):
    """A tool began to run."""

    call_id: str
    name: str


class ToolOutput(Event, frozen=True, kw_only=True, tag="tool_output"):
    """Streamed output of a running tool (shell stdout or stderr)."""

    call_id: str
    stream: Literal["stdout", "stderr"] = "stdout"
    text: str


class ToolResult(Event, frozen=True, kw_only=True, tag="tool_result"):
    """A tool finished; ``output`` is what the model is given back."""

    call_id: str
    name: str
    ok: bool
    output: str
    duration_ms: float = 0.0
    """How long the call took, less the time it waited for a person's approval."""
    diff: str = ""
    """A unified diff of what the tool changed, for display."""
    wait_ms: float = 0.0
    """How long the call waited for a person to approve or deny it (0: nobody was asked)."""
    images: list[ToolImage] = []
    """Images the tool gave back besides ``output`` (which names each one where it stood)."""
    denied_by: str = ""
    """Who refused the call when it did not run: ``person``, ``rule`` (a rule, a grant's absence in a
    mode that does not ask, or nobody to ask) or ``hook``; empty when it was not refused."""
    lines_added: int = 0
    """Lines the call's recorded change added (from its checkpoint journal entry; 0 for binary files)."""
    lines_removed: int = 0
    """Lines it removed."""
    files_changed: int = 0
    """Paths its recorded change created, changed or deleted."""


class CheckpointCreated(Event, frozen=True, kw_only=True, tag="checkpoint_created"):
    """A checkpoint was taken before a change."""

    checkpoint_id: str
    tool: str
    paths: list[str] = []
    turn: int = 0
    call_id: str = ""


class NotUndoable(Event, frozen=True, kw_only=True, tag="not_undoable"):
    """A change monkey's call made that its checkpoint could not record, so ``monkey undo`` cannot revert it.

    Said when the call ends: files over ``[checkpoints] max_file_size`` and files in nested git
    repositories that a shell command (or an external agent) created, changed or deleted, and
    paths that changed during the call but that monkey cannot be sure its call changed.
    """

    checkpoint_id: str
    tool: str = ""
    call_id: str = ""
    items: list[str] = []
    """``"path: why"``, one per path."""


class UndoApplied(Event, frozen=True, kw_only=True, tag="undo_applied"):
    """Changes monkey made were undone (``monkey undo``, ``monkey restore``, the TUI's /undo)."""

    undo_id: str
    checkpoint_ids: list[str] = []
    """The checkpoints whose changes were reverted, oldest first."""
    paths: list[str] = []
    """Every path put back."""
    removed: list[str] = []
    """Files monkey had created, removed again."""
    restored: list[str] = []
    """Files monkey had deleted, brought back."""
    forced: bool = False
    """Whether ``--force`` overwrote files changed by someone else since."""
    left_alone: list[str] = []
    """``"path: why"`` of changes monkey cannot be sure were its own: never reverted, even with ``--force``."""


class Usage(Event, frozen=True, kw_only=True, tag="usage"):
    """Tokens and cost of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    model: str = ""
    duration_ms: float = 0.0
    """From the request to this report (0: not measured)."""
    ttft_ms: float = 0.0
    """From the request to the first text, thinking or message (0: not measured)."""


class Retry(Event, frozen=True, kw_only=True, tag="retry"):
    """A transient failure; the call is tried again after ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str


class Fallback(Event, frozen=True, kw_only=True, tag="fallback"):
    """The backend failed for good; the model call goes on with the next configured one."""

    from_backend: str
    to_backend: str
    reason: str
    kind: str = ""
    """The failure's kind (``authentication``, ``overloaded`` ...), see monkey.backends.errors."""
    model: str = ""
    """The model the call goes on with."""


class BackendChanged(Event, frozen=True, kw_only=True, tag="backend_changed"):
    """A person switched the model or the backend mid-session (``/model``, ``/backend``)."""

    from_backend: str
    from_model: str
    to_backend: str
    to_model: str


class Error(Event, frozen=True, kw_only=True, tag="error"):
    """Something went wrong; ``fatal`` errors end the turn."""

    message: str
    kind: str = "error"
    fatal: bool = False


class TurnCompleted(Event, frozen=True, kw_only=True, tag="turn_completed"):
    """The agent finished working on the user's message."""

    turn: int
    reason: EndReason
    result: str = ""
    iterations: int = 0
    message: str = ""
    """Why the turn ended, for a person, when it did not simply complete (or that its answer was
    cut off)."""
    stop_reason: str = ""
    """How the final answer ended when it did not end on its own (``max_tokens``: cut off by the
    output token limit; ``refusal``, ``repetition``); empty otherwise. The turn is ``completed``."""


class SessionEnded(Event, frozen=True, kw_only=True, tag="session_ended"):
    """The session is over."""

    reason: EndReason
    message: str = ""
    turns: int = 0


class ContextUsage(Event, frozen=True, kw_only=True, tag="context_usage"):
    """How full the model's context window is, measured before a model call."""

    used: int
    """Tokens the next request takes (system prompt, tools and messages)."""
    window: int
    """The model's context window in tokens."""
    fraction: float
    """``used / window``: what the status bar shows as a percentage."""
    elided: int = 0
    """Old tool results sent as a one-line placeholder in this request."""
    edited: int = 0
    """Nodes the context policies sent changed in this request (elided ones included)."""


class ContextEdited(Event, frozen=True, kw_only=True, tag="context_edited"):
    """A context policy changed what the model is sent of some nodes (the store keeps them whole)."""

    policy: str
    """The step: ``drop_completed_tool_calls``, ``compress_failed_attempts``,
    ``summarize_subagent_chatter`` or ``elide_tool_results``."""
    nodes: int
    """Nodes the step changes in this request."""
    new: int
    """Of those, the ones it had not changed in the request before."""
    call_ids: list[str] = []
    """The tool calls of the newly changed nodes (at most 100)."""
    tokens_before: int = 0
    """Tokens of the request before this step."""
    tokens_after: int = 0
    """And after it."""


class ContextCompacted(Event, frozen=True, kw_only=True, tag="context_compacted"):
    """Older messages were replaced by a summary the model wrote; they stay in the store."""

    tokens_before: int
    tokens_after: int
    messages_compacted: int
    """How many leading messages the summary replaces."""
    summary: str
    """The summary message's whole text, as the model is sent it."""
    trigger: Literal["auto", "manual"] = "auto"


class AgentSession(Event, frozen=True, kw_only=True, tag="agent_session"):
    """An external agent (Claude Code, Codex) started or resumed its own session."""

    agent: str
    """The backend running it (``claude-code``, ``codex``)."""
    agent_session_id: str
    """The agent's own session (or thread) id, used to resume it on the next turn."""
    model: str = ""
    tools: list[str] = []


class BudgetReached(Event, frozen=True, kw_only=True, tag="budget_reached"):
    """A budget ran out (see :mod:`monkey.agent.budget`): the run ends with reason ``budget``."""

    budget: str
    """``max_turns``, ``max_budget_usd``, ``max_tokens`` or ``max_wall``."""
    used: float
    """What was used: model responses, US dollars, tokens or seconds."""
    limit: float
    owner: str = "main"
    """Whose budget it was: ``main`` (the run's), or a sub-agent's (``explore s-...``)."""
    scope: str = "run"
    """``session``: ``used`` counts the stored session's earlier runs too (``--budget-scope``); ``run``: this run's."""
    earlier: float = 0.0
    """How much of ``used`` earlier runs of the session spent."""


class Raw(Event, frozen=True, kw_only=True, tag="raw"):
    """Input that no known event type fits, kept as it came."""

    source: str = ""
    data: Any = None


AnyEvent = Union[  # noqa: UP007 (one event type a line: adding one is a one-line change)
    SessionStarted,
    TurnStarted,
    IterationStarted,
    TextDelta,
    ThinkingDelta,
    MessageCompleted,
    ToolCallEvent,
    ApprovalRequested,
    ApprovalResolved,
    ToolStarted,
    ToolOutput,
    ToolResult,
    CheckpointCreated,
    UndoApplied,
    NotUndoable,
    InstructionsLoaded,
    HookRan,
    Usage,
    Retry,
    Fallback,
    BackendChanged,
    Error,
    TurnCompleted,
    SessionEnded,
    ContextUsage,
    ContextCompacted,
    ContextEdited,
    ConversationCleared,
    DiagnosticsReported,
    AgentSession,
    BudgetReached,
    SubagentStarted,
    SubagentCompleted,
    ModeChanged,
    PlanSaved,
    StageStarted,
    StageCompleted,
    Raw,
]

EVENT_TYPES: dict[str, type[Event]] = {
    cls.__struct_config__.tag: cls
    for cls in AnyEvent.__args__  # type: ignore[attr-defined]
}
"""Every known event class by its tag."""


class DecodeError(ValueError):
    """A line that is not a JSON object at all."""


_encoder = msgspec.json.Encoder()
_loose = msgspec.json.Decoder()


@functools.cache
def _decoder() -> msgspec.json.Decoder[Any]:
    """The typed decoder, made at the first decode: making it reads every event's annotations,
    which would cost each ``import monkey.events`` (the app's first frame) about 15 ms."""
    return msgspec.json.Decoder(AnyEvent)


def encode(event: Event) -> bytes:
    """The event as one compact JSON object (no newline)."""
    return _encoder.encode(event)


def encode_line(event: Event) -> bytes:
    """The event as one JSON line, newline included."""
    buf = bytearray()
    _encoder.encode_into(event, buf)
    buf += b"\n"
    return bytes(buf)


def decode(data: bytes | str, *, source: str = "") -> Event:
    """Decode one JSON object into its event type.

    Unknown types and objects whose fields do not fit their type become :class:`Raw`.
    Raises :class:`DecodeError` only when ``data`` is not a JSON object at all.
    """
    try:
        return _decoder().decode(data)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not valid JSON: {exc}") from exc
    try:
        obj = _loose.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # e.g. b'"\x80"': a string, not UTF-8
        raise DecodeError(f"not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise DecodeError(f"expected a JSON object, got {type(obj).__name__}")
    ts = obj.get("ts")
    sid = obj.get("session_id")
    return Raw(
        ts=ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else time.time(),
        session_id=sid if isinstance(sid, str) else "",
        source=source,
        data=obj,
    )


def decode_line(line: bytes | str, *, source: str = "") -> Event | None:
    """Decode one line of a JSON-lines stream; a blank line gives ``None``."""
    if not line.strip():
        return None
    return decode(line, source=source)
