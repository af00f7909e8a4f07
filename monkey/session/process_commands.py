"""``/processes``: the session's background processes (see :mod:`monkey.tools.processes`).

``/processes`` lists them (the app's view with live output, the REPL's lines); ``/processes ID``
shows the latest of what one printed; ``/processes stop ID`` stops one (a person's word: no
approval); ``/processes keep ID`` keeps one running past the end of the session (until monkey
quits), ``/processes release ID`` lets it go with the session again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monkey.session.replies import Note, ProcessView, Reply
from monkey.tools.errors import ToolError
from monkey.tools.process_tools import describe

if TYPE_CHECKING:
    from monkey.tools.processes import ProcessTable

__all__ = ["processes_command", "TAIL", "listing"]

TAIL = 4000
"""Characters of a process's output ``/processes ID`` shows (the latest)."""
USAGE = "usage: /processes [ID | stop ID | keep ID | release ID]"


def listing(table: ProcessTable) -> str:
    """The processes, one line each (their ids, states, seconds and commands)."""
    entries = table.all()
    if not entries:
        return "no background processes (shell_execute with background starts one)"
    return "\n".join(describe(e) for e in entries)


async def processes_command(table: ProcessTable, rest: str) -> list[Reply]:
    """Run ``/processes REST`` on ``table``."""
    words = rest.split()
    try:
        if not words:
            return [ProcessView(table, listing(table))]
        if len(words) == 1 and words[0] not in ("stop", "keep", "release"):
            entry = table.get(words[0])
            text = entry.output.read(max(entry.output.end - TAIL, 0), TAIL)[0]
            return [Note(f"{describe(entry)}\n{text.rstrip() or '(nothing printed yet)'}")]
        if len(words) != 2 or words[0] not in ("stop", "keep", "release"):
            return [Note(USAGE, "warning")]
        action, ident = words
        if action == "stop":
            entry = await table.stop(ident)
            return [Note(f"stopped {entry.id}: {entry.command}")]
        entry = table.keep_aside(ident, action == "keep")
        if action == "keep":
            return [Note(f"{entry.id} keeps running when this session ends (it stops when monkey quits)")]
        return [Note(f"{entry.id} stops with this session again")]
    except ToolError as exc:
        return [Note(str(exc), "warning")]
