"""``process_output``, ``process_stop`` and ``process_list``: the background processes ``shell_execute``
started with ``background`` (see :mod:`monkey.tools.processes`).

Reading output and listing only read (they run beside other reads, asked nothing); stopping a
process monkey started needs no approval either: it changes nothing in the workspace and ends only
what monkey itself began (deny rules still apply to all three).
"""

from __future__ import annotations

import time
from typing import Annotated

import msgspec

from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from monkey.tools.processes import BackgroundProcess, ProcessTable

__all__ = ["ProcessList", "ProcessOutput", "ProcessStop", "describe"]


def _table(ctx: ToolContext) -> ProcessTable:
    if ctx.processes is None:
        raise ToolError("no background processes here: this session cannot run any")
    return ctx.processes


def describe(entry: BackgroundProcess, now: float | None = None) -> str:
    """One line about a process: its id, state, how long it ran and its command."""
    end = entry.ended if entry.ended is not None else (now if now is not None else time.time())
    kept = ", kept" if entry.kept else ""
    return f"{entry.id}  {entry.status()}{kept}  {max(end - entry.started, 0):.0f} s  {entry.command}"


class OutputArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of process_output."""

    id: Annotated[str, msgspec.Meta(description="The process id shell_execute gave back, e.g. `p1`.")]
    since: Annotated[
        Annotated[int, msgspec.Meta(ge=0)] | None,
        msgspec.Meta(
            description="Give what was printed from this position on (the `next` of the previous "
            "read); omitted: everything still kept."
        ),
    ] = None


class ProcessOutput(Tool[OutputArgs]):
    """What a background process printed since a point."""

    name = "process_output"
    Args = OutputArgs

    async def run(self, args: OutputArgs, ctx: ToolContext) -> ToolOutcome:
        entry = _table(ctx).get(args.id)
        text, after, dropped = entry.output.read(args.since or 0, ctx.shell.output_limit)
        lines = [text] if text else []
        if text and not text.endswith("\n"):
            lines.append("\n")
        if dropped:
            lines.insert(0, f"[{dropped} earlier characters are no longer kept]\n")
        more = entry.output.end - after
        tail = f"; {more} more characters: read again with since={after}" if more > 0 else ""
        lines.append(f"[{entry.id} {entry.status()}; next={after}{tail}]")
        return ToolOutcome(output="".join(lines))


class StopArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of process_stop."""

    id: Annotated[str, msgspec.Meta(description="The process id shell_execute gave back, e.g. `p1`.")]


class ProcessStop(Tool[StopArgs]):
    """Stop a background process and everything it started."""

    name = "process_stop"
    Args = StopArgs
    read_only = False

    async def run(self, args: StopArgs, ctx: ToolContext) -> ToolOutcome:
        table = _table(ctx)
        entry = table.get(args.id)
        was = entry.status()
        await table.stop(args.id)
        return ToolOutcome(
            output=f"stopped {entry.id} ({was} before; its process group and the processes it "
            f"started are gone)\n{describe(entry)}"
        )


class ListArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of process_list (none)."""


class ProcessList(Tool[ListArgs]):
    """The background processes with their state and exit status."""

    name = "process_list"
    Args = ListArgs

    async def run(self, args: ListArgs, ctx: ToolContext) -> ToolOutcome:
        entries = _table(ctx).all()
        if not entries:
            return ToolOutcome(output="no background processes")
        return ToolOutcome(output="\n".join(describe(e) for e in entries))
