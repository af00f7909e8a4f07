"""Context policies: what each step sends of old nodes, that the steps never break the
pairing of calls and results, that their boundaries move in steps (so a provider's cache is
reused), and a 100-turn session that stays small while the store keeps every node."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.context.policies import (
    PolicySettings,
    compress_failed_attempts,
    drop_completed_tool_calls,
    summarize_subagent_chatter,
)
from monkey.context.tokens import approx_tokens
from monkey.events import ToolCallSpec
from monkey.messages import Message


def _count(m: Message) -> int:
    return approx_tokens(m.content) + 4


def _conversation(shapes: list[tuple[str, int, bool]], *, prompt: str = "go") -> list[Message]:
    """A user prompt, then per (tool, output size, failed) one assistant call and its result."""
    out = [Message(role="user", content=prompt)]
    for i, (name, size, failed) in enumerate(shapes):
        call = ToolCallSpec(id=f"c{i}", name=name, arguments={"path": f"f{i}.txt", "content": "y" * 500})
        out.append(Message(role="assistant", content=f"step {i}", tool_calls=[call]))
        out.append(
            Message(role="tool", tool_call_id=f"c{i}", name=name, is_error=failed, content=f"result {i}\n" + "x" * size)
        )
    return out


def test_old_tool_calls_become_one_line_and_say_how_to_get_them_back() -> None:
    messages = _conversation([("file_read", 4000, False)] * 12)
    applied = drop_completed_tool_calls(messages, PolicySettings(keep=4, step=4, max_tokens=10**6), _count)
    assert applied.edited == [f"c{i}" for i in range(8)], "12 calls, keep 4: the oldest 8 go"
    fewer = drop_completed_tool_calls(messages[:-4], PolicySettings(keep=4, step=4, max_tokens=10**6), _count)
    assert fewer.edited == [f"c{i}" for i in range(4)], "10 calls: the boundary waits for a whole step"
    first = applied.messages[2]
    assert first.content.startswith("[file_read ok: 'result 0'") and "memory_read key='call:c0'" in first.content
    assert applied.messages[2 * 9].content == messages[2 * 9].content, "the newest four stay whole"
    assert applied.messages[1].tool_calls[0].arguments["content"] == "[500 characters, dropped from context]"
    assert applied.messages[1].tool_calls[0].arguments["path"] == "f0.txt"
    assert messages[2].content.startswith("result 0\n"), "the agent's own list is not touched"


def test_the_token_cap_drops_more_but_never_the_newest_result() -> None:
    messages = _conversation([("shell_execute", 40_000, False)] * 3)
    applied = drop_completed_tool_calls(messages, PolicySettings(keep=8, step=1, max_tokens=5_000), _count)
    assert applied.edited == ["c0", "c1"], "the newest is sent whole however big it is"


def test_results_the_model_has_not_seen_are_never_dropped() -> None:
    messages = _conversation([("file_read", 1000, False)] * 3)
    two = [ToolCallSpec(id=f"p{i}", name="file_read", arguments={}) for i in range(4)]
    messages.append(Message(role="assistant", tool_calls=two))
    messages += [Message(role="tool", tool_call_id=f"p{i}", name="file_read", content="z" * 100) for i in range(4)]
    applied = drop_completed_tool_calls(messages, PolicySettings(keep=1, step=1, max_tokens=10**6), _count)
    assert applied.edited == ["c0", "c1", "c2"]


def test_a_failed_attempt_retried_later_becomes_its_first_error_line() -> None:
    messages = _conversation(
        [("file_edit", 300, True), ("file_read", 300, False), ("file_edit", 300, False), ("shell_execute", 300, True)]
    )
    applied = compress_failed_attempts(messages, PolicySettings(), _count)
    assert applied.edited == ["c0"], "the last failure was not retried: it stays whole"
    assert applied.messages[2].content == "[failed attempt, retried later] result 0"
    assert applied.messages[2].is_error


def test_older_sub_agent_results_keep_their_handoff_and_the_start_of_the_answer() -> None:
    from monkey.agent.subagents import handoff_text
    from monkey.events import Handoff

    answer = "The parser now accepts trailing commas. " * 40
    text = handoff_text(
        Handoff(
            agent="general",
            session_id="s-child",
            summary=answer,
            files_changed=["a.py"],
            key_outputs=["file_edit: ok"],
            turns=3,
            completed=True,
            reason="completed",
        )
    )
    messages = _conversation([("task", 0, False), ("task", 0, False)])
    for i in (2, 4):
        messages[i] = Message(role="tool", tool_call_id=messages[i].tool_call_id, name="task", content=text)
    applied = summarize_subagent_chatter(messages, PolicySettings(), _count)
    assert applied.edited == ["c0"]
    short = applied.messages[2].content
    assert short.startswith("agent: general (session s-child)\ncompleted: yes") and "files changed: a.py" in short
    assert len(short) < len(text) // 2 and "memory_read key='call:c0'" in short
    assert applied.messages[4].content == text, "the newest child's handoff stays whole"


_shapes = st.lists(
    st.tuples(
        st.sampled_from(["file_read", "shell_execute", "file_edit", "task"]), st.integers(0, 30_000), st.booleans()
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_shapes, st.integers(1, 10), st.integers(1, 6), st.integers(1_000, 60_000))
def test_the_steps_keep_every_call_paired_and_move_in_steps(shapes, keep, step, max_tokens) -> None:
    ps = PolicySettings(keep=keep, step=step, max_tokens=max_tokens)
    messages = _conversation(shapes)
    previous: set[str] = set()
    for n in range(len(shapes) + 1):
        prefix = messages[: 1 + 2 * n]
        out = prefix
        for policy in (compress_failed_attempts, summarize_subagent_chatter, drop_completed_tool_calls):
            applied = policy(out, ps, _count)
            assert [(m.role, m.tool_call_id, m.name, m.is_error) for m in applied.messages] == [
                (m.role, m.tool_call_id, m.name, m.is_error) for m in out
            ]
            assert [[c.id for c in m.tool_calls] for m in applied.messages] == [
                [c.id for c in m.tool_calls] for m in out
            ]
            out = applied.messages
        if n:
            assert out[-1] == prefix[-1], "the result the model has not seen yet is sent whole"
        dropped = set(drop_completed_tool_calls(prefix, ps, _count).edited)
        assert previous <= dropped, "a node once dropped stays dropped as the conversation grows"
        if all(size >= 400 for _, size, _ in shapes):  # every dropped result is shortened: edited == the cut
            assert len(dropped) % step == 0, "the boundary moves by whole steps"
        previous = dropped


async def test_a_hundred_turns_stay_under_50k_tokens_and_the_store_keeps_every_node(
    tmp_path: Path, monkey_home: Path
) -> None:
    from monkey.context.window import ContextManager, ContextSettings
    from monkey.agent.loop import Agent, AgentOptions
    from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
    from monkey.events import ContextEdited, ContextUsage
    from monkey.session.session import Session
    from tests.support.agent import ListSink

    ws = tmp_path / "ws"
    ws.mkdir()
    turns = []
    for i in range(100):
        (ws / f"big{i}.txt").write_text("".join(f"line {j} of file {i}: {'data ' * 12}\n" for j in range(120)))
        call = ScriptCall(id=f"c{i}", name="file_read", arguments={"path": f"big{i}.txt"})
        turns += [ScriptTurn(text=f"Reading file {i}.", tool_calls=[call]), ScriptTurn(text=f"File {i} read.")]
    backend = ScriptedBackend(Script(turns=turns, context_window=200_000))
    agent = Agent(
        backend=backend,
        workspace=ws,
        options=AgentOptions(max_iterations=5),
        context=ContextManager(backend, settings=ContextSettings()),
    )
    sink = ListSink()
    session = Session(agent, switcher=None, show=sink, tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        for i in range(100):
            await session.send(f"read big{i}.txt")
    finally:
        await session.end()
    used = [e.used for e in sink if isinstance(e, ContextUsage)]
    assert len(used) == 200
    whole = sum(approx_tokens((ws / f"big{i}.txt").read_text()) for i in range(100))
    assert whole > 200_000, "without the policies the conversation would not fit the window at all"
    assert max(used) < 50_000, max(used)
    print(f"100 turns: largest request {max(used)} tokens, last {used[-1]}; the files alone are {whole}")
    edits = [e for e in sink if isinstance(e, ContextEdited)]
    assert edits and all(e.policy == "drop_completed_tool_calls" for e in edits)
    assert sum(e.new for e in edits) == edits[-1].nodes, "each node is reported once, when first changed"
    with sqlite3.connect(monkey_home / "monkey.db") as db:
        kinds = dict(
            db.execute(
                "SELECT kind, count(*) FROM nodes WHERE session_id = ? GROUP BY kind", (agent.session_id,)
            ).fetchall()
        )
        results = [
            r[0]
            for r in db.execute("SELECT data FROM nodes WHERE session_id = ? AND kind = 'tool'", (agent.session_id,))
        ]
    assert kinds == {"user": 100, "assistant": 200, "tool": 100}
    assert all(b"line 119 of file" in r for r in results), "the store keeps every result whole"


def test_an_unknown_policy_is_a_clear_error(tmp_path: Path, monkey_home: Path) -> None:
    from tests.support.cli import init_git_workspace, invoke, write_script

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    (monkey_home / "config.toml").write_text('[context]\npolicies = ["compact", "drop_everything"]\n')
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    run = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(ws), "--task", "x"], home=monkey_home
    )
    assert run.returncode == 2
    assert (
        "context.policies: unknown 'drop_everything'; expected some of compact, compress_failed_attempts" in run.stderr
    )
