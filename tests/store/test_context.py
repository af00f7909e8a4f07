"""The context window: token counts, eliding old tool output, compaction (scripted and local
model), and a compacted session resumed with its summary."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from monkey.context.window import ContextManager, ContextSettings
from monkey.agent.loop import Agent
from monkey.context.tokens import BpeCounter, approx_tokens, counter_for, encoding_for_model, window_for
from monkey.backends.scripted import Script, ScriptedBackend, ScriptTurn
from monkey.events import ToolCallSpec
from monkey.messages import Message
from monkey.store import SessionStore
from tests.support.cli import invoke, write_script


def test_bpe_counts_match_openai_references() -> None:
    # the cl100k example of OpenAI's cookbook, and o200k's count of a greeting
    assert BpeCounter("cl100k_base").count_tokens("tiktoken is great!") == 6
    assert BpeCounter("o200k_base").count_tokens("Hello, world!") == 4
    assert BpeCounter().count_tokens("") == 0
    assert encoding_for_model("gpt-4") == "cl100k_base" and encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert window_for(ScriptedBackend(Script(turns=[]))) == 0
    assert window_for(ScriptedBackend(Script(turns=[], context_window=5000))) == 5000


def test_bpe_counts_equal_tiktoken_on_the_same_ranks() -> None:
    """bpe-openai ships OpenAI's own rank file; tiktoken built on it counts the same."""
    tiktoken = pytest.importorskip("tiktoken")
    import base64
    import gzip
    import hashlib
    from importlib import resources

    data = gzip.decompress(resources.files("bpe_openai.data").joinpath("cl100k_base.tiktoken.gz").read_bytes())
    # the hash tiktoken itself expects for cl100k_base
    assert hashlib.sha256(data).hexdigest() == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
    pat = (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    )
    enc = tiktoken.Encoding("cl100k_base", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    counter = BpeCounter("cl100k_base")
    samples = [Path(__file__).read_text(), "Grüße, 世界! 🙂\n\n\tdef f(x):\n    return x ** 2\n", "  " * 50, "a" * 5000]
    for text in samples:
        assert counter.count_tokens(text) == len(enc.encode_ordinary(text))


def _agent(workspace: Path, turns: list[ScriptTurn], window: int, **settings) -> Agent:
    backend = ScriptedBackend(Script(turns=turns, context_window=window))
    return Agent(
        backend=backend, workspace=workspace, context=ContextManager(backend, settings=ContextSettings(**settings))
    )


def test_old_tool_results_are_elided_past_the_threshold(workspace: Path) -> None:
    agent = _agent(workspace, [], window=1, keep_tool_results=2)
    assert agent.context is not None
    big = "x" * 4000
    for i in range(4):
        call = ToolCallSpec(id=f"c{i}", name="file_read", arguments={"path": f"f{i}"})
        agent.messages += [
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{i}", name="file_read", content=big),
        ]
    agent.context.window = 10**9  # nothing to do below the threshold
    wire, _, elided = agent.context._wire(agent)
    assert elided == 0 and wire == agent.messages
    agent.context.window = 2_000
    wire, used, elided = agent.context._wire(agent)
    assert elided == 2
    assert [m.content.startswith("[output of file_read elided") for m in wire if m.role == "tool"] == [
        True,
        True,
        False,
        False,
    ]
    assert [m.tool_call_id for m in wire if m.role == "tool"] == ["c0", "c1", "c2", "c3"], "pairs kept"
    assert agent.messages[1].content == big, "only the request is shortened, never the history"


def test_compaction_through_the_cli_and_resume(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    for name in ("f1.txt", "f2.txt"):
        (workspace / name).write_text("".join(f"{name} line {i:04d} with some words\n" for i in range(240)))
    probe = _agent(workspace, [], window=1)
    assert probe.context is not None
    base = probe.context.base_tokens(probe)
    window = 2 * (base + 2600)  # the second read passes half of it, the first does not
    summary = "The user asked to read f1.txt and f2.txt. f1.txt has 240 numbered lines. Next: answer."
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Reading f1.", "tool_calls": [{"name": "file_read", "arguments": {"path": "f1.txt"}}]},
            {"text": "Reading f2.", "tool_calls": [{"name": "file_read", "arguments": {"path": "f2.txt"}}]},
            {"text": summary},
            {"text": "Both files have 240 lines."},
        ],
        context_window=window,
    )
    args = [
        "agent",
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--cwd",
        str(workspace),
        "--output-format",
        "stream-json",
        "--task",
        "read f1.txt then f2.txt",
        "--compact-at",
        "0.5",
    ]
    run = invoke(args, home=monkey_home)
    assert run.returncode == 0, run.stderr
    compacted = run.of_type("context_compacted")
    assert len(compacted) == 1, [e["type"] for e in run.events]
    c = compacted[0]
    assert c["messages_compacted"] == 3 and c["trigger"] == "auto" and c["summary"].endswith(summary)
    assert c["tokens_after"] < c["tokens_before"]
    usage = run.of_type("context_usage")
    assert [u["window"] for u in usage] == [window] * 3 and usage[-1]["fraction"] < 0.5
    assert run.of_type("turn_completed")[0]["result"] == "Both files have 240 lines."

    sid = run.events[0]["session_id"]
    conn = sqlite3.connect(monkey_home / "monkey.db")
    rows = conn.execute(
        "SELECT kind, in_context, tokens, data FROM nodes WHERE session_id = ? ORDER BY seq", (sid,)
    ).fetchall()
    in_context = [(k, json.loads(d)) for k, i, _, d in rows if i]
    assert [k for k, _ in in_context] == ["summary", "assistant", "tool", "assistant"]
    compacted_nodes = [(k, t) for k, i, t, d in rows if not i]
    assert [k for k, _ in compacted_nodes][:3] == ["user", "assistant", "tool"], "the originals stay, excluded"
    summary_tokens = next(t for k, i, t, _ in rows if k == "summary")
    assert summary_tokens * 2 <= sum(t for _, t in compacted_nodes[:3]), "the compacted part at least halves"

    async def load():
        async with await SessionStore.open() as store:
            return await store.load(sid)

    restored = asyncio.run(load())
    assert not restored.damaged
    assert restored.messages[0].content == c["summary"] and restored.messages[0].content in restored.summaries

    bad = invoke(args[:-1] + ["0"], home=monkey_home)
    assert bad.returncode == 2 and "fraction" in bad.stderr


async def test_manual_compaction_and_failures(workspace: Path) -> None:
    agent = _agent(workspace, [ScriptTurn(text="short summary"), ScriptTurn(error="overloaded")], window=0)
    assert agent.context is not None
    made: list = []
    assert await agent.context.compact(agent, made.append) is None, "nothing to compact yet"
    for i in range(3):
        agent.messages += [
            Message(role="user", content=f"question {i} " + "words " * 200),
            Message(role="assistant", content=f"answer {i} " + "more " * 200),
        ]
    before = list(agent.messages)
    result = await agent.context.compact(agent, made.append)
    assert result is not None and result.trigger == "manual"
    assert (
        agent.messages[0].content.endswith("short summary")
        and agent.messages[1:] == before[result.messages_compacted :]
    )
    agent.messages = before
    assert await agent.context.compact(agent, made.append) is None
    assert made[-1].type == "error" and "overloaded" in made[-1].message and agent.messages == before


@pytest.mark.local_model
def test_compaction_with_the_local_model(workspace: Path) -> None:
    pytest.importorskip("llama_cpp")
    from monkey.backends.local import LocalBackend

    backend = LocalBackend(n_ctx=2048, max_tokens=48, temperature=0, seed=1)
    agent = Agent(backend=backend, workspace=workspace, context=ContextManager(backend))
    assert agent.context is not None and agent.context.window == 2048 and counter_for(backend) is backend
    facts = ["The project is called Zebra.", "The bug is in parse_date in util.py.", "Use pytest -q."]
    for i, fact in enumerate(facts):
        agent.messages += [
            Message(role="user", content=f"{fact} " + "Please keep this in mind. " * 6),
            Message(role="assistant", content=f"Noted ({i}). " + "I will remember that. " * 6),
        ]
    made: list = []
    before = list(agent.messages)
    result = asyncio.run(agent.context.compact(agent, made.append))
    assert result is not None, made
    assert result.tokens_after < result.tokens_before
    summary = agent.messages[0]
    head = before[: result.messages_compacted]
    assert agent.context.tokens(summary) * 2 <= sum(agent.context.tokens(m) for m in head)
    assert summary.content.strip() and summary.content in agent.context.summaries
    assert agent.messages[1:] == before[result.messages_compacted :]
    assert [e.type for e in made] == ["usage", "context_compacted"]
    assert approx_tokens("abcd") == 1
