"""``--resume`` without an id, in line mode: list the workspace's recent sessions and ask which."""

from __future__ import annotations

import sys
from pathlib import Path

from monkey.safe_text import escape_controls
from monkey.session.stored import format_when, recent_sessions
from monkey.store import StoreError

__all__ = ["pick_session"]


def pick_session(workspace: Path, *, interactive: bool) -> str:
    """``--resume`` without an id: list recent sessions and ask (on a terminal) which to resume.

    Raises:
        StoreError: no sessions, or no terminal to ask on (the list is in the message).
    """
    sessions = recent_sessions(workspace)
    if not sessions:
        raise StoreError(f"no sessions in {workspace} to resume")
    lines = [
        f"{i:>3}. {s.id}  {format_when(s.updated)}  {s.state:<11} {s.turns:>3} {'turn ' if s.turns == 1 else 'turns'}  "
        f"{escape_controls(s.title[:60], keep_newlines=False)}"
        for i, s in enumerate(sessions, 1)
    ]
    if not interactive:
        raise StoreError(
            "--resume needs a session id when there is no terminal to ask on; recent sessions:\n" + "\n".join(lines)
        )
    sys.stdout.write("Recent sessions of this workspace:\n" + "\n".join(lines) + "\n")
    sys.stdout.flush()
    while True:
        try:
            answer = input(f"resume which? [1-{len(sessions)}, Enter: 1] ").strip()
        except (EOFError, KeyboardInterrupt):
            raise StoreError("no session chosen") from None
        if not answer:
            return sessions[0].id
        if answer.isdigit() and 1 <= int(answer) <= len(sessions):
            return sessions[int(answer) - 1].id
        matches = [s.id for s in sessions if s.id.startswith(answer)]
        if len(matches) == 1:
            return matches[0]
