"""The editor's rendering of slash command replies (:mod:`monkey.session.replies`): markdown text.

An editor has no screens of monkey's, so lists are numbered lines, a diff is a fenced
block, and what only a terminal can do (quit, the event pane, the clipboard) is said plainly.
"""

from __future__ import annotations

from monkey.session import replies as r
from monkey.session.commands import REGISTRY

__all__ = ["render", "HIDDEN", "HELP"]

HIDDEN = frozenset({"/exit", "/events", "/copy"})
"""Commands an editor does its own way (closing the thread, its own views, its own copy): not offered."""

HELP = "\n".join(
    [
        "monkey's commands (type them as a message):",
        *(f"- `{c.name}{' ' + c.usage if c.usage else ''}`: {c.help}" for c in REGISTRY if c.name not in HIDDEN),
        "",
        "`@file` or a file dropped into the message sends it with the message.",
    ]
)


def _when(ts: float) -> str:
    from monkey.session.stored import format_when

    return format_when(ts)


def render(reply: r.Reply) -> str:  # noqa: C901 - one case per reply type
    """One reply as markdown text."""
    match reply:
        case r.Note(text=text, level=level):
            return text if level == "info" else f"{level}: {text}"
        case r.Help():
            return HELP
        case r.Quit():
            return "there is nothing to quit here: close the thread in your editor"
        case r.ModeChanged(text=text):
            return text
        case r.ToggleEvents():
            return "there is no event pane here: monkey's events are the updates your editor shows"
        case r.Cleared():
            return ""  # the note that comes with it says so
        case r.InstructionsChanged():
            return ""  # the editor shows no list of instruction files; the note says what changed
        case r.CopyText():
            return "there is no clipboard here: copy the answer from your editor"
        case r.CheckpointDiff(text=text):
            return f"```diff\n{text.rstrip()}\n```"
        case r.CheckpointList(checkpoints=infos):
            if not infos:
                return "no checkpoints in this session yet (monkey takes one before every change it makes)"
            lines = ["checkpoints of this session, oldest first (`/checkpoints show N` shows one's diff):"]
            for n, info in enumerate(infos, 1):
                stats = (
                    "binary" if info.binary and not (info.added or info.removed) else f"+{info.added} -{info.removed}"
                )
                lines.append(
                    f"{n}. {_when(info.created_at)} {info.tool} {info.state} {stats} "
                    f"{', '.join(info.paths) or '(unknown)'}"
                )
            return "\n".join(lines)
        case r.SessionList(sessions=sessions, current=current):
            if not sessions:
                return "no stored sessions in this workspace yet"
            lines = ["sessions of this workspace, most recent first (* is this one):"]
            for n, s in enumerate(sessions, 1):
                mark = " *" if s.id == current else ""
                title = " ".join(s.title.split())[:60] or "(untitled)"
                lines.append(f"{n}. `{s.id}`{mark} {_when(s.updated)} · {s.turns} turns · {title}")
            return "\n".join(lines)
        case r.SendPrompt(shown=shown):
            return shown
        case r.StartWorkflow(shown=shown):
            return shown
        case r.MoveToWorktree(path=path):
            return f"open a new session with the folder `{path}` from your editor: this thread stays in its workspace"
        case r.ResumeSession(session_id=session_id):
            return (
                f"open session `{session_id}` from your editor's list of past sessions "
                "(it loads through session/load); this thread stays this session"
            )
    return ""
