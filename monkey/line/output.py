"""Sinks that print the event stream of ``monkey agent --task``.

- :class:`StreamJsonSink`: every event as one JSON line (the public ``stream-json`` format).
- :class:`JsonSink`: one final JSON object with the result, usage and counts.
- :class:`TextSink`: readable output; colours, tool summaries and diffs on a terminal.
- :class:`StdoutGuard`: wraps one of them and stops quietly when stdout's reader goes away.

Everything the model or a tool wrote is escaped before it reaches a terminal, so it can
never move the cursor, set the clipboard or change the window title.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import IO, Any

from monkey import events as ev
from monkey.agent.budget import Exceeded
from monkey.safe_text import escape_controls

__all__ = [
    "StreamJsonSink",
    "JsonSink",
    "TextSink",
    "Totals",
    "StdoutGuard",
    "EXIT_CODES",
    "EXIT_PIPE_CLOSED",
    "stdout_to_null",
]

EXIT_CODES = {"completed": 0, "error": 1, "max_iterations": 3, "denied": 4, "budget": 5, "cancelled": 130}
"""Exit status of ``monkey agent --task`` (and ``--tui --task``) by how the task ended."""


class Totals:
    """Running totals of a stream: usage, counts, the final result."""

    def __init__(self) -> None:
        self.events = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_creation_tokens = 0
        self.cost_usd = 0.0
        self.tool_calls = 0
        self.iterations = 0
        self.session_id = ""
        self.result = ""
        self.reason = ""
        self.stop_reason = ""
        """How the last answer ended when it was cut off (``max_tokens`` ...), else empty."""
        self.message = ""
        self.children: set[str] = set()
        """Sessions of the sub-agents started in the stream (their events name them)."""
        self.budget: ev.BudgetReached | None = None
        """The budget that ended the run, if one did (the root's event: the first one)."""
        self.started = time.monotonic()

    def add(self, event: ev.Event) -> None:
        """Account for one event."""
        self.events += 1
        if isinstance(event, ev.SubagentStarted):
            self.children.add(event.child_session_id)
        if event.session_id in self.children:  # a sub-agent's: only its cost counts
            if isinstance(event, ev.Usage):
                self._usage(event)
            elif isinstance(event, ev.BudgetReached) and self.budget is None:
                self.budget = event
            return
        if event.session_id:
            self.session_id = event.session_id
        match event:
            case ev.Usage():
                self._usage(event)
            case ev.ToolCallEvent():
                self.tool_calls += 1
            case ev.TurnCompleted():
                self.result, self.reason, self.message = event.result, event.reason, event.message
                self.stop_reason = event.stop_reason
                self.iterations += event.iterations
            case ev.SessionEnded():
                self.reason, self.message = event.reason, event.message or self.message
            case ev.BudgetReached():
                self.budget = event

    def _usage(self, event: ev.Usage) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cache_read_tokens += event.cache_read_tokens
        self.cache_creation_tokens += event.cache_creation_tokens
        self.cost_usd += event.cost_usd

    @property
    def subtype(self) -> str:
        """How the run ended in Claude Code's words: ``success``, ``error_max_turns``,
        ``error_max_budget_usd`` ..., ``error_max_iterations``, else ``error_during_execution``."""
        if self.reason == "completed":
            return "success"
        if self.reason == "budget" and self.budget is not None:
            return f"error_{self.budget.budget}"
        if self.reason == "max_iterations":
            return "error_max_iterations"
        return "error_during_execution"


class StreamJsonSink:
    """Writes every event as a JSON line and flushes, so a reader sees it at once."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.totals = Totals()

    def __call__(self, event: ev.Event) -> None:
        self.totals.add(event)
        self.out.write(ev.encode_line(event))
        self.out.flush()

    def close(self) -> None:
        """Nothing buffered."""


class JsonSink:
    """Collects the stream and writes one JSON object at the end."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.totals = Totals()
        self.extra: dict[str, Any] = {}
        """More keys for the final object (the workspace and the files changed)."""

    def __call__(self, event: ev.Event) -> None:
        self.totals.add(event)

    def close(self) -> None:
        """Write the final object."""
        t = self.totals
        obj: dict[str, Any] = {
            "type": "result",
            "subtype": t.subtype,
            "session_id": t.session_id,
            "reason": t.reason,
            "is_error": t.reason != "completed",
            "result": t.result,
            "message": t.message,
            "stop_reason": t.stop_reason,
            "iterations": t.iterations,
            "tool_calls": t.tool_calls,
            "events": t.events,
            "duration_s": round(time.monotonic() - t.started, 3),
            "usage": {
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "cache_read_tokens": t.cache_read_tokens,
                "cache_creation_tokens": t.cache_creation_tokens,
                "cost_usd": round(t.cost_usd, 6),
            },
            **self.extra,
        }
        if t.budget is not None:
            obj["budget"] = {
                "budget": t.budget.budget,
                "used": t.budget.used,
                "limit": t.budget.limit,
                "owner": t.budget.owner,
                "scope": t.budget.scope,
                "earlier": t.budget.earlier,
            }
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.out.flush()


_STYLES = {
    "dim": "2",
    "bold": "1",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


RESULT_LINES = 6
"""How many lines of a tool's result the text output shows; the rest is counted."""


def _clip(line: str, width: int = 200) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _result_lines(text: str, most: int = RESULT_LINES) -> list[str]:
    """The first ``most`` lines of ``text`` (trailing blank lines dropped), then ``… K more lines``."""
    lines = text.rstrip().splitlines()
    if len(lines) <= most:
        return [_clip(line) for line in lines] or [""]
    more = len(lines) - most + 1
    return [_clip(line) for line in lines[: most - 1]] + [f"… {more} more lines"]


def _call_summary(name: str, arguments: dict[str, Any]) -> str:
    if name == "shell_execute":
        return str(arguments.get("command", ""))
    if name == "exit_plan_mode":
        return next((line for line in str(arguments.get("plan", "")).splitlines() if line.strip()), "")
    for key in ("path", "pattern"):
        if key in arguments:
            return str(arguments[key])
    if name == "task" and "description" in arguments:
        return f"{arguments.get('agent', 'general')}: {arguments['description']}"
    return json.dumps(arguments, ensure_ascii=False)[:100]


def _reached(event: ev.BudgetReached) -> str:
    """``budget max_turns reached: 3 of 3 model responses``, as the turn's end says it (earlier runs' share too)."""
    return Exceeded(
        event.budget, event.used, event.limit, owner=event.owner, scope=event.scope, earlier=event.earlier
    ).describe()


class TextSink:
    """Readable output: the answer as it streams, one line per tool call, diffs for edits."""

    def __init__(
        self,
        out: IO[str],
        *,
        color: bool,
        show_tool_output: bool = True,
        show_fatal_errors: bool = True,
        show_prompts: bool = False,
    ) -> None:
        self.out = out
        self.color = color
        self.show_tool_output = show_tool_output
        self.show_fatal_errors = show_fatal_errors
        """False when the caller reports the error that ended the turn itself (``--task`` says it on stderr)."""
        self.show_prompts = show_prompts
        """Print each message the person sent (a replay; live, the person just typed it)."""
        self.totals = Totals()
        self._at_line_start = True
        self._asked: set[str] = set()
        """Calls whose diff the person already saw in an approval prompt."""
        self._streamed: dict[str, str] = {}
        """Output each call streamed as it ran (already on screen, not repeated with its result)."""
        self._block = ""
        """What the open line belongs to: ``thinking``, ``text`` or nothing."""

    def _style(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_STYLES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._at_line_start = text.endswith(("\n", "\n\x1b[0m"))  # a styled piece ends with its reset

    def _line(self, text: str, *styles: str) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(self._style(text, *styles) + "\n")

    def __call__(self, event: ev.Event) -> None:
        self.totals.add(event)
        if event.session_id in self.totals.children:
            self._render_child(event)
        else:
            self._render(event)
        self.out.flush()

    def _render_child(self, event: ev.Event) -> None:
        """A sub-agent's event: its tool calls, one line each under the ``task`` call (its answer
        comes back as the task's result)."""
        match event:
            case ev.ToolCallEvent():
                summary = escape_controls(_call_summary(event.name, event.arguments), keep_newlines=False)
                self._line(_clip(f"  │ ● {event.name} {summary}"), "dim")
            case ev.ToolResult() if not event.ok:
                first = (event.output.strip().splitlines() or [""])[0]
                self._line(_clip(f"  │   ✗ {escape_controls(first)}"), "red")
            case ev.SubagentStarted():
                self._line(
                    f"  │ ↳ {escape_controls(event.agent, keep_newlines=False)}: "
                    f"{escape_controls(event.description, keep_newlines=False)}",
                    "dim",
                )
            case ev.BudgetReached():
                self._line(f"  │ {_reached(event)}", "yellow")
            case _:
                pass

    def _render(self, event: ev.Event) -> None:  # noqa: C901, PLR0912 - one dispatch, one case per type
        if self._block and not isinstance(event, (ev.TextDelta, ev.ThinkingDelta, ev.Usage)):
            self._block = ""
        match event:
            case ev.TurnStarted() if self.show_prompts:
                lines = event.prompt.strip().splitlines() or [""]
                more = " …" if len(lines) > 1 else ""
                self._end_line()
                self._write("\n")
                self._line(f"› {escape_controls(lines[0])}{more}", "bold")
            case ev.TextDelta():
                if self._block != "text":  # the answer starts on its own line, apart from the thinking
                    self._end_line()
                    self._block = "text"
                self._write(escape_controls(event.text))
            case ev.ThinkingDelta():
                if self._block != "thinking":
                    self._end_line()
                    self._write(self._style("thinking: ", "dim", "bold"))
                    self._block = "thinking"
                self._write(self._style(escape_controls(event.text), "dim"))
            case ev.ToolCallEvent():
                summary = escape_controls(_call_summary(event.name, event.arguments), keep_newlines=False)
                self._line(f"● {event.name} {summary}", "cyan")
            case ev.ApprovalRequested():
                self._asked.add(event.call_id)
            case ev.ApprovalResolved() if event.by in ("rule", "session") and event.decision != "denied":
                self._line(f"  approved ({escape_controls(event.reason)})", "dim")  # a denial shows as the result
            case ev.ToolOutput() if self.show_tool_output:
                self._streamed[event.call_id] = self._streamed.get(event.call_id, "") + event.text
                self._write(self._style(escape_controls(event.text), "dim"))
            case ev.ToolResult():
                self._tool_result(event)
            case ev.Error() if self.show_fatal_errors or not event.fatal:
                self._line(f"error: {escape_controls(event.message)}", "red")
            case ev.NotUndoable():
                for item in event.items:
                    self._line(f"  cannot be undone: {escape_controls(item, keep_newlines=False)}", "yellow")
            case ev.SubagentStarted():
                self._line(
                    f"  ↳ {escape_controls(event.agent, keep_newlines=False)}: "
                    f"{escape_controls(event.description, keep_newlines=False)}",
                    "cyan",
                )
            case ev.BudgetReached():
                self._line(f"{_reached(event)}", "yellow")
            case ev.Retry():
                self._line(f"retrying in {event.delay:.1f}s: {escape_controls(event.reason)}", "yellow")
            case ev.ContextCompacted() if event.trigger == "auto":
                self._line(
                    f"(context compacted: {event.messages_compacted} messages summarised, "
                    f"{event.tokens_before} → {event.tokens_after} tokens)",
                    "dim",
                )
            case ev.Fallback():
                self._line(
                    f"{escape_controls(event.from_backend)} failed ({escape_controls(event.reason)}); "
                    f"going on with {escape_controls(event.to_backend)} {escape_controls(event.model)}",
                    "yellow",
                )
            case ev.PlanSaved():
                self._plan(event)
            case ev.ModeChanged() if event.by != "user":  # a command's own reply says it
                where = " (set from the browser)" if event.by == "web" else ""
                self._line(f"mode: {escape_controls(event.mode)}{where}", "dim")
            case ev.StageStarted():
                self._line(f"── {escape_controls(event.stage)} (iteration {event.iteration}) ──", "bold")
            case ev.StageCompleted():
                said = f"{event.verdict}: {event.reason}" if event.verdict else event.outcome
                self._line(
                    f"── {escape_controls(event.stage)} ended: {escape_controls(said, keep_newlines=False)} "
                    f"({event.wall_s:.1f}s, {event.input_tokens + event.output_tokens} tokens)",
                    "dim",
                )
            case ev.TurnCompleted():
                if not self._at_line_start:
                    self._write("\n")
                if event.stop_reason and self.show_fatal_errors:  # --task says it on stderr instead
                    self._line(escape_controls(event.message), "yellow")
            case _:
                pass

    def _plan(self, event: ev.PlanSaved) -> None:
        """The plan the model proposed (the product of a plan-mode run), and what became of it."""
        said = {
            "approved": f"approved, going on in {event.mode} mode",
            "sent_back": "sent back to the model",
            "rejected": "rejected",
            "recorded": "recorded; nobody approved it, so the session stays in plan mode",
        }
        self._line(f"plan ({said[event.outcome]}):", "bold")
        for line in escape_controls(event.plan).splitlines():
            self._line("  " + line)
        if event.path:
            self._line(f"  (kept in {escape_controls(event.path)})", "dim")

    def _end_line(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _tool_result(self, event: ev.ToolResult) -> None:
        output = event.output
        streamed = self._streamed.pop(event.call_id, "")
        if streamed:  # on screen already: only what the result adds (the exit code, a timeout)
            output = output[len(streamed) :] if output.startswith(streamed) else output.rstrip().rsplit("\n", 1)[-1]
        mark, colour = ("✓", "green") if event.ok else ("✗", "red")
        for n, line in enumerate(_result_lines(escape_controls(output))):
            self._line(f"  {mark if n == 0 else ' '} {line}".rstrip(), colour if n == 0 else "dim")
        if event.diff and event.call_id not in self._asked:
            for line in escape_controls(event.diff).splitlines():
                if line.startswith(("+++", "---")):
                    self._line("    " + line, "bold")
                elif line.startswith("+"):
                    self._line("    " + line, "green")
                elif line.startswith("-"):
                    self._line("    " + line, "red")
                elif line.startswith("@@"):
                    self._line("    " + line, "magenta")
                else:
                    self._line("    " + line, "dim")

    def close(self) -> None:
        """End with a newline if the answer did not."""
        if not self._at_line_start:
            self._write("\n")
        self.out.flush()


EXIT_PIPE_CLOSED = 141
"""Exit status when stdout's reader went away (``| head``): 128 + SIGPIPE, what a shell
reports for any program stopped that way, so ``set -o pipefail`` scripts see the usual value."""


class StdoutGuard:
    """Hands events to a sink until the reader of stdout goes away (``monkey ... | head``).

    Then stdout is pointed at the null device, so nothing more (not even Python's last
    flush at exit) fails, and :attr:`closed` tells the driver to stop quietly.
    """

    def __init__(self, sink: StreamJsonSink | JsonSink | TextSink) -> None:
        self.sink = sink
        self.closed = False
        """Whether stdout's reader went away."""

    def __call__(self, event: ev.Event) -> bool:
        """Show ``event``; False once stdout is closed."""
        if self.closed:
            return False
        try:
            self.sink(event)
        except BrokenPipeError:
            self._lost()
        return not self.closed

    def close(self) -> None:
        """Let the sink write its end (the json object, a last newline)."""
        if not self.closed:
            try:
                self.sink.close()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        self.closed = True
        stdout_to_null()


def stdout_to_null() -> None:
    """Point stdout at the null device, so Python's last flush at exit writes nowhere instead of
    failing (a reader that closed the pipe: ``monkey ... | head``)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
