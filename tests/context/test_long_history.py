"""A request late in a long conversation costs what an early one does: the context policies
keep what they made of old messages (a message edited once is not edited again at every request,
the messages up to the last boundary are not looked at one by one again), and counting a
conversation that only grew counts its new messages.

Cost is counted, not timed: the Python calls one ``prepare`` makes (``sys.setprofile``), the
same on every machine. Before, a request at turn 300 made more than ten times the calls of one
at turn 20 (every old result summarised again, every message counted twice)."""

from __future__ import annotations

import sys
from pathlib import Path

from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptedBackend
from monkey.context.tokens import ApproxCounter
from monkey.context.window import ContextManager
from monkey.events import Event, ToolCallSpec
from monkey.messages import Message


def _turn(t: int) -> list[Message]:
    """A person's message, a read (every fifth one failed and tried again), the answer."""
    out = [Message(role="user", content=f"read file {t}")]
    names = ["file_read", "file_read"] if t % 5 == 0 else ["file_read"]
    for k, name in enumerate(names):
        call = ToolCallSpec(id=f"c{t}_{k}", name=name, arguments={"path": f"f{t % 7}.txt", "note": "n" * 400})
        out.append(Message(role="assistant", content="", tool_calls=[call]))
        failed = len(names) == 2 and k == 0
        out.append(
            Message(
                role="tool",
                tool_call_id=call.id,
                name=name,
                is_error=failed,
                content="no such file\n" if failed else f"line {t}\n" * 40,
            )
        )
    out.append(Message(role="assistant", content=f"f{t % 7}.txt has forty lines."))
    return out


async def _calls_per_request(agent: Agent, context: ContextManager, turns: range) -> float:
    """Python calls a request makes, on average over ``turns`` (two moves of the boundary at least)."""
    events: list[Event] = []
    calls = 0

    def count(frame, what, arg):  # type: ignore[no-untyped-def]
        nonlocal calls
        if what == "call":
            calls += 1

    for t in turns:
        agent.messages = agent.messages + _turn(t)
        sys.setprofile(count)
        try:
            await context.prepare(agent, events.append)
        finally:
            sys.setprofile(None)
    return calls / len(turns)


async def test_a_request_late_in_a_long_conversation_costs_what_an_early_one_does(tmp_path: Path) -> None:
    context = ContextManager(ScriptedBackend(Script(turns=[])), counter=ApproxCounter())
    agent = Agent(backend=ScriptedBackend(Script(turns=[])), workspace=tmp_path, context=context)
    for t in range(12):
        agent.messages = agent.messages + _turn(t)
        await context.prepare(agent, lambda event: None)
    early = await _calls_per_request(agent, context, range(12, 28))
    for t in range(28, 292):
        agent.messages = agent.messages + _turn(t)
        await context.prepare(agent, lambda event: None)
    late = await _calls_per_request(agent, context, range(292, 308))
    assert len(agent.messages) > 1300
    assert late <= 1.5 * early, f"{late:.0f} Python calls a request at turn 300 against {early:.0f} at turn 20"


def test_what_the_policies_remember_never_changes_what_is_sent() -> None:
    """Every request of a growing conversation (parallel calls, failures, sub-agents, results the
    model has not seen yet) gets from the steps with their memory exactly what it gets without."""
    import random

    from monkey.context.policies import DEFAULT_STACK, PolicySettings, apply_policy

    rng = random.Random(7)
    settings = PolicySettings(keep=3, step=2, max_tokens=400, arg_chars=20)
    memo: dict = {}
    messages: list[Message] = []
    for t in range(150):
        messages = messages + [Message(role="user", content=f"turn {t}")]
        calls = [
            ToolCallSpec(
                id=f"c{t}_{j}",
                name=rng.choice(["file_read", "shell_execute", "task"]),
                arguments={"x": "y" * rng.choice([5, 50])},
            )
            for j in range(rng.choice([1, 1, 2, 3]))
        ]
        messages = messages + [Message(role="assistant", content="", tool_calls=calls)]
        for c in calls:
            body = (
                "agent: x\nsummary:\n" + "w " * rng.choice([10, 400])
                if c.name == "task"
                else "line\n" * rng.choice([2, 40])
            )
            messages = messages + [
                Message(role="tool", tool_call_id=c.id, name=c.name, content=body, is_error=rng.random() < 0.2)
            ]
        if rng.random() < 0.9:
            messages = messages + [Message(role="assistant", content="ok")]
        for step in DEFAULT_STACK[:3]:
            fresh = apply_policy(step, messages, settings, lambda m: len(m.content) // 4 + 4)
            kept = apply_policy(step, messages, settings, lambda m: len(m.content) // 4 + 4, memo)
            assert kept.messages == fresh.messages and kept.edited == fresh.edited, (t, step)
