"""What a command answers: typed replies that each front end renders its own way.

A reply says *what* happened (a line to tell, a list to show, the app to quit); the app
renders a :class:`CheckpointList` as its timeline screen, the line REPL as numbered lines.
Texts in replies are not escaped: the front end escapes what it shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from monkey.checkpoints.api import CheckpointInfo, Checkpoints
    from monkey.store import SessionInfo
    from monkey.tools.processes import ProcessTable

__all__ = [
    "Reply",
    "Note",
    "Quit",
    "Help",
    "Cleared",
    "InstructionsChanged",
    "ModeChanged",
    "ToggleEvents",
    "CheckpointList",
    "CheckpointDiff",
    "SessionList",
    "ResumeSession",
    "SendPrompt",
    "CopyText",
    "StartWorkflow",
    "ProcessView",
    "MoveToWorktree",
]

Level = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class Note:
    """A line (or a few) to tell the person."""

    text: str
    level: Level = "info"


@dataclass(frozen=True)
class Quit:
    """End the session and leave."""


@dataclass(frozen=True)
class Help:
    """The commands, as ``(name, what it does)``; the front end adds its own keys."""

    commands: list[tuple[str, str]]


@dataclass(frozen=True)
class Cleared:
    """The conversation was emptied: a front end clears what it shows of it."""


@dataclass(frozen=True)
class InstructionsChanged:
    """The files the model follows changed (``/memory add`` made the memory file, ``remove``
    emptied it): a front end that names them shows the new list."""

    files: list[str]


@dataclass(frozen=True)
class ModeChanged:
    """The permission mode changed: a front end shows the new mode where it shows the mode."""

    mode: str
    text: str


@dataclass(frozen=True)
class ToggleEvents:
    """Show or hide the events (the app's pane, the REPL's event lines)."""


@dataclass(frozen=True)
class CheckpointList:
    """This session's checkpoints, oldest first (the app's timeline, the REPL's numbered list)."""

    checkpoints: list[CheckpointInfo]
    api: Checkpoints | None = None
    """The :class:`~monkey.checkpoints.api.Checkpoints` they came from (the timeline undoes through it)."""


@dataclass(frozen=True)
class CheckpointDiff:
    """One checkpoint's diff."""

    text: str


@dataclass(frozen=True)
class SessionList:
    """Stored sessions of this workspace, most recent first (the app's picker, the REPL's list)."""

    sessions: list[SessionInfo] = field(default_factory=list)
    current: str = ""
    """The id of the session in use."""


@dataclass(frozen=True)
class ResumeSession:
    """Switch to stored session ``session_id`` (checked: this workspace, not open elsewhere)."""

    session_id: str


@dataclass(frozen=True)
class SendPrompt:
    """Run a turn with ``prompt`` now, as if the person had sent it (``shown`` says what it is)."""

    prompt: str
    shown: str


@dataclass(frozen=True)
class StartWorkflow:
    """Run workflow ``name`` on ``task`` now, as a turn would run (``shown`` says what it is)."""

    name: str
    task: str
    shown: str


@dataclass(frozen=True)
class CopyText:
    """Put ``text`` on the clipboard; ``what`` names it for the confirmation."""

    text: str
    what: str


@dataclass(frozen=True)
class ProcessView:
    """The background processes: the app's view with their live output, the REPL's lines (``text``)."""

    table: ProcessTable
    text: str


@dataclass(frozen=True)
class MoveToWorktree:
    """End this session and go on in a new one in the worktree at ``path`` (made by ``/worktree``)."""

    path: str
    name: str


Reply = (
    Note
    | Quit
    | Help
    | Cleared
    | InstructionsChanged
    | ModeChanged
    | ToggleEvents
    | CheckpointList
    | CheckpointDiff
    | SessionList
    | ResumeSession
    | SendPrompt
    | CopyText
    | StartWorkflow
    | ProcessView
    | MoveToWorktree
)
"""Any reply."""
