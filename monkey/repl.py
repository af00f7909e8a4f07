"""The line-based terminal front end: inline approvals and the plain REPL (prompt-toolkit)."""

from __future__ import annotations

import asyncio
import signal
import sys

from monkey.agent.approval import ApprovalRequest, Decision
from monkey.agent.loop import Agent
from monkey.safe_text import escape_controls

__all__ = ["InlineApprover", "run_repl", "HELP"]

HELP = """\
Type a task and press Enter. While the agent works, Ctrl-C cancels the turn.
  /help       this help
  /approvals  show the approvals granted for this session (/approvals revoke N to drop one)
  /clear      start a new conversation
  /compact    summarise the older part of the conversation to free context
  /exit       quit (Ctrl-D on an empty line does too)"""


def _ansi(text: str, code: str) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if sys.stdout.isatty() else text


class InlineApprover:
    """Asks on the terminal: ``y`` once, ``a`` for this session, ``n`` deny (with a reason)."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Show the request and wait for the person's answer."""
        from prompt_toolkit import PromptSession

        async with self._lock:  # concurrent requests are asked one after the other
            out = sys.stdout
            out.write("\n" + _ansi(f"? {request.tool} needs approval", "1;33") + "\n")
            for line in request.summary.splitlines() or [""]:
                out.write("    " + _diff_colour(line) + "\n")
            for warning in request.warnings:
                out.write(_ansi(f"  ! {escape_controls(warning)}", "31") + "\n")
            out.write(f"  [y] allow once   [a] allow for this session: {request.grant}   [n] deny\n")
            out.flush()
            session: PromptSession[str] = PromptSession()
            while True:
                try:
                    answer = (await session.prompt_async("  allow? [y/a/n] ")).strip().lower()
                except (EOFError, KeyboardInterrupt):
                    return Decision(approved=False, by="user", reason="the user stopped the turn", stop=True)
                if answer in ("y", "yes"):
                    return Decision(approved=True, by="user", reason="approved once")
                if answer in ("a", "always"):
                    return Decision(approved=True, scope="session", by="user", reason=f"approved for the session: {request.grant}")
                if answer in ("n", "no"):
                    try:
                        reason = (await session.prompt_async("  tell the model why (Enter: just stop): ")).strip()
                    except (EOFError, KeyboardInterrupt):
                        reason = ""
                    if not reason:
                        return Decision(approved=False, by="user", reason="the user stopped the turn", stop=True)
                    return Decision(approved=False, by="user", reason=f"the user said: {reason}")


def _diff_colour(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return _ansi(line, "32")
    if line.startswith("-") and not line.startswith("---"):
        return _ansi(line, "31")
    if line.startswith("@@"):
        return _ansi(line, "35")
    return line


def _history_path(agent: Agent):  # type: ignore[no-untyped-def]
    from monkey.config import history_path

    path = history_path(agent.workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def _record(recorder, event) -> None:  # type: ignore[no-untyped-def]
    """Hand one event to the session store; a write error is shown and stops the turn."""
    from monkey.store import StoreError

    if recorder is None or recorder.failed is not None:
        return
    recorder.add(event)
    if recorder.should_flush(event):
        try:
            await recorder.flush(wait=recorder.durable(event))
        except StoreError as exc:
            sys.stderr.write(f"\nmonkey: {exc}; this session is no longer saved\n")
            raise


async def _run_turn(agent: Agent, prompt: str, sink, recorder=None) -> None:  # type: ignore[no-untyped-def]
    from monkey.store import StoreError

    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        if agent.cancel():
            sys.stderr.write("\n(cancelling)\n")

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        if not agent.started:
            started = agent.session_started()
            sink(started)
            await _record(recorder, started)
        async for event in agent.run(prompt):
            sink(event)
            try:
                await _record(recorder, event)
            except StoreError:
                agent.cancel()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    sink.close()


async def _repl(agent: Agent, continue_: bool = False, resume: str | None = None) -> int:
    from monkey.commands.resume import open_session
    from monkey.store import StoreError

    try:
        stored = await open_session(agent, continue_=continue_, resume=resume)
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}\n")
        return 1
    for notice in stored.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    try:
        return await _prompt_loop(agent, stored.recorder)
    finally:
        await stored.close()


async def _prompt_loop(agent: Agent, recorder) -> int:  # type: ignore[no-untyped-def]
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    from monkey.output import TextSink

    sink = TextSink(sys.stdout, color=sys.stdout.isatty())
    session: PromptSession[str] = PromptSession(history=FileHistory(str(_history_path(agent))))
    print(f"monkey · {agent.backend.name} · {agent.backend.model} · {agent.workspace}")
    print("Type a task, /help for commands, Ctrl-D to quit.")
    while True:
        try:
            text = (await session.prompt_async("› ")).strip()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/help":
            print(HELP)
        elif text == "/clear":
            agent.messages.clear()
            recorder.reconcile()
            print("(new conversation)")
        elif text == "/compact":
            await _compact_command(agent, sink, recorder)
        elif text.startswith("/approvals"):
            _approvals_command(agent, text)
        elif text.startswith("/"):
            print(f"unknown command {text.split()[0]}; /help lists them")
        else:
            await _run_turn(agent, text, sink, recorder)
    if agent.started:
        ended = agent.session_ended("completed")
        sink(ended)
        recorder.add(ended)
    await agent.backend.aclose()
    return 0


async def _compact_command(agent: Agent, sink, recorder) -> None:  # type: ignore[no-untyped-def]
    """``/compact``: summarise the older messages now."""
    from monkey.store import StoreError

    if agent.context is None:
        print("(this agent has no context manager)")
        return
    made: list = []
    if not agent.started:
        made.append(agent.session_started())
    result = await agent.context.compact(agent, made.append, trigger="manual")
    for event in made:
        sink(event)
        recorder.add(event)
    recorder.reconcile()
    try:
        await recorder.flush()
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}; this session is no longer saved\n")
    if result is None:
        if not any(e.type == "error" for e in made):
            print("(nothing to compact yet)")
    else:
        print(f"(compacted {result.messages_compacted} messages: {result.tokens_before} → {result.tokens_after} tokens)")


def _approvals_command(agent: Agent, text: str) -> None:
    grants = list(agent.policy.grants.items())
    parts = text.split()
    if len(parts) == 3 and parts[1] == "revoke" and parts[2].isdigit():
        index = int(parts[2]) - 1
        if 0 <= index < len(grants):
            agent.policy.revoke(grants[index][0])
            print(f"revoked: {grants[index][1]}")
        else:
            print(f"no grant number {parts[2]}")
        return
    if not grants:
        print("no approvals granted in this session")
    for i, (_, what) in enumerate(grants, 1):
        print(f"  {i}. {what}")


def run_repl(agent: Agent, *, continue_: bool = False, resume: str | None = None) -> int:
    """Run the plain REPL until the person quits (in a stored session, new or resumed)."""
    try:
        return asyncio.run(_repl(agent, continue_, resume))
    except KeyboardInterrupt:
        return 130
