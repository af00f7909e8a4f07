"""The one place where agent events become Textual messages.

Agent events (``monkey.events``) are plain msgspec structs that know nothing of the UI.
:func:`translate` matches each one once and returns the UI messages it means; the app
posts them. Every event also becomes an :class:`EventLogged` for the event pane.
"""

from __future__ import annotations

from textual.message import Message

from monkey.events import (
    ApprovalResolved,
    BackendChanged,
    CheckpointCreated,
    ContextCompacted,
    ContextUsage,
    Error,
    Event,
    Fallback,
    InstructionsLoaded,
    IterationStarted,
    MessageCompleted,
    ModeChanged,
    NotUndoable,
    PlanSaved,
    StageCompleted,
    StageStarted,
    Retry,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolOutput,
    ToolResult,
    ToolStarted,
    TurnCompleted,
    Usage,
)

__all__ = [
    "translate",
    "translate_child",
    "SubagentBegan",
    "SubagentActivity",
    "SubagentEnded",
    "EventLogged",
    "StreamDelta",
    "MessageDone",
    "ToolCalled",
    "ToolProgress",
    "ToolFinished",
    "Notice",
    "StatusChanged",
    "TurnDone",
]


class EventLogged(Message):
    """Any event, for the event pane."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event
        """The event as the agent produced it."""


class StreamDelta(Message):
    """A piece of the assistant's text (``kind="text"``) or reasoning (``"thinking"``)."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__()
        self.kind = kind
        """``"text"`` or ``"thinking"``."""
        self.text = text
        """The piece, untrusted (escaped when shown)."""


class MessageDone(Message):
    """The model finished one message; the streamed block is complete."""


class ToolCalled(Message):
    """The model asked for a tool call."""

    def __init__(self, call_id: str, name: str, arguments: dict) -> None:
        super().__init__()
        self.call_id = call_id
        """The call's id (its block's key)."""
        self.name = name
        """The tool."""
        self.arguments = arguments
        """The arguments as the model wrote them."""


class ToolProgress(Message):
    """Something happened to a running call: it started, printed output, or was decided."""

    def __init__(self, call_id: str, text: str = "", state: str = "") -> None:
        super().__init__()
        self.call_id = call_id
        """The call's id."""
        self.text = text
        """Output to append (shell stdout/stderr)."""
        self.state = state
        """A new state word for the block's title (``running``, ``denied`` ...), or empty."""


class ToolFinished(Message):
    """A tool call finished."""

    def __init__(
        self, call_id: str, ok: bool, output: str, duration_ms: float, diff: str, wait_ms: float = 0.0
    ) -> None:
        super().__init__()
        self.call_id = call_id
        """The call's id."""
        self.ok = ok
        """Whether it succeeded."""
        self.output = output
        """What the model is given back."""
        self.duration_ms = duration_ms
        """How long it ran."""
        self.diff = diff
        """A unified diff of what it changed (may be empty)."""
        self.wait_ms = wait_ms
        """How long it waited for a person's approval (not in ``duration_ms``)."""


class Notice(Message):
    """A line for the transcript: an error, a retry, a checkpoint, an undo."""

    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__()
        self.text = text
        """What to say (untrusted parts already escaped by the widget)."""
        self.level = level
        """``info``, ``warning`` or ``error``."""


class StatusChanged(Message):
    """Figures for the status bar; ``None`` fields are unchanged."""

    def __init__(self, **fields: object) -> None:
        super().__init__()
        self.fields = fields
        """Status bar attributes to set (``backend``, ``tokens_in`` ...)."""


class SubagentBegan(Message):
    """A ``task`` call of the session started a sub-agent."""

    def __init__(self, event: SubagentStarted) -> None:
        super().__init__()
        self.event = event


class SubagentActivity(Message):
    """An event of a sub-agent's session (or of one of its own sub-agents)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SubagentEnded(Message):
    """A sub-agent of the session ended, with its handoff."""

    def __init__(self, event: SubagentCompleted) -> None:
        super().__init__()
        self.event = event


def translate_child(event: Event) -> list[Message]:
    """The UI messages an event of a sub-agent's session means: the event pane's entry, the
    sub-agent's block, and its spending in the status bar (charged to the session's budget)."""
    out: list[Message] = [EventLogged(event), SubagentActivity(event)]
    match event:
        case Usage(input_tokens=i, output_tokens=o, cost_usd=cost):
            out.append(StatusChanged(add_in=i, add_out=o, add_cost=cost))
        case CheckpointCreated():
            out.append(StatusChanged(add_checkpoint=1))
        case _:
            pass
    return out


class InstructionsRead(Message):
    """Instruction files the model follows from now on (a folder's below the workspace)."""

    def __init__(self, paths: list[str], *, more: bool = False) -> None:
        super().__init__()
        self.paths = paths
        self.more = more


class TurnDone(Message):
    """The turn ended."""

    def __init__(self, reason: str, message: str, result: str = "") -> None:
        super().__init__()
        self.reason = reason
        """Why it ended (``completed``, ``cancelled`` ...)."""
        self.message = message
        """Why, for a person, when it did not simply complete."""
        self.result = result
        """The final answer's text."""


def translate(event: Event) -> list[Message]:  # noqa: PLR0912 - one dispatch, one case per event type
    """The UI messages one agent event means (the event pane's entry first)."""
    out: list[Message] = [EventLogged(event)]
    match event:
        case TextDelta(text=text):
            out.append(StreamDelta("text", text))
        case ThinkingDelta(text=text):
            out.append(StreamDelta("thinking", text))
        case MessageCompleted():
            out.append(MessageDone())
        case ToolCallEvent(call_id=cid, name=name, arguments=args):
            out.append(ToolCalled(cid, name, dict(args)))
        case ToolStarted(call_id=cid):
            out.append(ToolProgress(cid, state="running"))
        case ToolOutput(call_id=cid, text=text):
            out.append(ToolProgress(cid, text=text))
        case ToolResult(call_id=cid, ok=ok, output=output, duration_ms=ms, diff=diff, wait_ms=wait):
            out.append(ToolFinished(cid, ok, output, ms, diff, wait))
        case ApprovalResolved(call_id=cid, decision=decision, by=by, reason=reason):
            state = "denied" if decision == "denied" else f"approved by {by}"
            out.append(ToolProgress(cid, state=state))  # the reason: in the block, from the call's result
        case SessionStarted(backend=backend, model=model, mode=mode):
            out.append(StatusChanged(backend=backend, model=model, **({"mode": mode} if mode else {})))
        case InstructionsLoaded(files=refs):
            out.append(InstructionsRead([r.path for r in refs], more=True))
        case StageStarted(stage=stage, iteration=n):
            out.append(Notice(f"── workflow stage: {stage} (iteration {n})"))
        case StageCompleted(stage=stage, outcome=outcome, verdict=verdict, reason=reason):
            said = f"{verdict.replace('_', ' ')}: {reason}" if verdict else outcome
            out.append(Notice(f"── {stage} ended: {said}", "info" if outcome == "completed" else "warning"))
        case ModeChanged(mode=mode, by=by):
            out.append(StatusChanged(mode=mode))
            if by == "web":  # /mode's own reply says the others
                out.append(Notice(f"mode set to {mode} from the browser"))
        case PlanSaved(outcome=outcome, mode=mode, path=path):
            plans = {
                "approved": f"plan approved: going on in {mode} mode",
                "sent_back": "plan sent back to the model",
                "rejected": "plan rejected: still in plan mode",
                "recorded": "plan recorded (still in plan mode)",
            }
            out.append(Notice(plans[outcome] + (f"; kept in {path}" if path else "")))
        case IterationStarted(iteration=n, max_iterations=m):
            out.append(StatusChanged(iteration=n, max_iterations=m))
        case Usage(input_tokens=i, output_tokens=o, cost_usd=cost):
            out.append(StatusChanged(add_in=i, add_out=o, add_cost=cost))
        case ContextUsage(fraction=fraction):
            out.append(StatusChanged(context=fraction))
        case CheckpointCreated():
            out.append(StatusChanged(add_checkpoint=1))
        case ContextCompacted(messages_compacted=n, tokens_before=b, tokens_after=a, trigger="auto"):
            out.append(Notice(f"compacted {n} messages: {b} → {a} tokens"))  # /compact says it itself
        case Retry(attempt=attempt, delay=delay, reason=reason):
            out.append(Notice(f"retry {attempt} in {delay:.1f}s: {reason}", "warning"))
        case BackendChanged(to_backend=backend, to_model=model):
            out.append(StatusChanged(backend=backend, model=model))
        case Fallback(from_backend=src, to_backend=dst, reason=reason):
            out.append(Notice(f"{src} failed ({reason}); going on with {dst}", "warning"))
            out.append(StatusChanged(backend=dst))
        case NotUndoable(items=items):
            out.extend(Notice(f"cannot be undone: {item}", "warning") for item in items)
        case Error(message=message, fatal=fatal):
            out.append(Notice(message, "error" if fatal else "warning"))
        case TurnCompleted(reason=reason, message=message, result=result):
            out.append(TurnDone(reason, message, result))
        case SubagentStarted():
            out.append(SubagentBegan(event))
        case SubagentCompleted():
            out.append(SubagentEnded(event))
        case _:
            pass
    return out
