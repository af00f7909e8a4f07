"""Resume fidelity: a session continued from the database sends byte for byte the requests
the original agent would have sent; and the integrity check of the stored chains."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.backends.scripted import ScriptCall, ScriptTurn
from monkey.session.stored import open_session
from monkey.store import SessionStore, StoreError
from tests.support.agent import ListSink, db, drive, make_agent


def _turns() -> list[list[ScriptTurn]]:
    """Three user turns; explicit call ids so every run names its calls alike."""
    read = ScriptCall(id="c1", name="file_read", arguments={"path": "notes.txt"})
    missing = ScriptCall(id="c2", name="file_read", arguments={"path": "nope.txt"})
    listing = ScriptCall(id="c3", name="list_directory", arguments={})
    grep = ScriptCall(id="c4", name="grep_search", arguments={"pattern": "line"})
    return [
        [
            ScriptTurn(thinking="look first", text="Reading.", tool_calls=[read, missing]),
            ScriptTurn(text="The notes have 40 lines."),
        ],
        [ScriptTurn(text="", tool_calls=[listing, grep]), ScriptTurn(text="Two files, many lines.")],
        [ScriptTurn(text="Bye — ünïcödé ✓.")],
    ]


PROMPTS = ["read the notes", "list and grep", "say bye"]
SUMMARY = ScriptTurn(text="Summary: the notes have 40 lines; a listing and a grep were run.")


async def _compact_stored(workspace: Path) -> None:
    """``/compact`` between turns, as the REPL does it, in a process of its own."""
    from monkey.session.session import Session

    agent = make_agent(workspace, [SUMMARY])
    session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open(continue_=True)
    try:
        await session.command("/compact")
    finally:
        await session.end()


@pytest.mark.parametrize("window", [0, 3500, -1], ids=["plain", "eliding", "compacted"])
async def test_resumed_requests_are_byte_identical(workspace: Path, window: int) -> None:
    """Each turn runs in a new agent resumed from the database (and, for ``compacted``, a
    manual compaction in between); one agent that never stopped sends the same bytes."""
    compacting = window < 0
    window = max(window, 0)
    (workspace / "notes.txt").write_text("".join(f"line {i} of the notes\n" for i in range(40)))
    phases = _turns()
    resumed_requests: list[bytes] = []
    session_id = None
    for i, (turns, prompt) in enumerate(zip(phases, PROMPTS, strict=True)):
        agent = make_agent(workspace, turns, window=window, compact_at=1.0)
        await drive(agent, prompt, continue_=i > 0)
        assert agent.backend.calls == len(turns)
        resumed_requests += agent.backend.encoded
        session_id = session_id or agent.session_id
        assert agent.session_id == session_id
        if compacting and i == 1:
            await _compact_stored(workspace)
    reference = make_agent(
        workspace,
        [*phases[0], *phases[1], *([SUMMARY] if compacting else []), *phases[2]],
        window=window,
        compact_at=1.0,
        session_id=session_id,
    )
    for i, prompt in enumerate(PROMPTS):
        async for _ in reference.run(prompt):
            pass
        if compacting and i == 1:
            assert reference.context is not None
            assert await reference.context.compact(reference, lambda e: None) is not None
    reference_requests = [r for r in reference.backend.encoded if b"You write the summary" not in r]
    assert len(reference_requests) == len(resumed_requests) == 5
    for ours, theirs in zip(resumed_requests, reference_requests, strict=True):
        assert ours == theirs
    if window:
        assert b"elided to save context" in resumed_requests[-1], "the eliding policy was exercised"
    if compacting:
        assert b"Summary of the earlier conversation" in resumed_requests[-1], "the compaction was exercised"


async def test_resumed_session_reports_itself(workspace: Path) -> None:
    agent = make_agent(workspace, [ScriptTurn(text="one")])
    first = await drive(agent, "first")
    again = make_agent(workspace, [ScriptTurn(text="two")])
    second = await drive(again, "second", resume=agent.session_id[:10])
    assert first[0].type == "session_started" and not first[0].resumed
    assert second[0].type == "session_started" and second[0].resumed
    assert second[1].turn == 2
    async with await SessionStore.open() as store:
        info = await store.get(agent.session_id)
        restored = await store.load(agent.session_id)
    assert info is not None and info.turns == 2 and info.status == "completed" and info.pid == 0
    assert [m.content for m in restored.messages] == ["first", "one", "second", "two"]
    assert info.events == len(first) + len(second)


async def test_altered_and_missing_rows_are_reported_and_repaired(workspace: Path, monkey_home: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    agent = make_agent(workspace, _turns()[0])
    await drive(agent, "read the notes")
    sid = agent.session_id
    conn = db(monkey_home)
    with conn:
        # someone edits the stored result of the first tool call, and deletes two events
        seq, data = next(
            r
            for r in conn.execute("SELECT seq, data FROM nodes WHERE session_id = ? AND kind = 'tool'", (sid,))
            if b"hello" in r[1]
        )
        conn.execute(
            "UPDATE nodes SET data = ? WHERE session_id = ? AND seq = ?", (data.replace(b"hello", b"HACKED"), sid, seq)
        )
        conn.execute("DELETE FROM events WHERE session_id = ? AND seq IN (3, 4)", (sid,))
        last = conn.execute("SELECT max(seq) FROM events WHERE session_id = ?", (sid,)).fetchone()[0]
        conn.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (sid, last - 1))
    conn.close()
    async with await SessionStore.open() as store:
        restored = await store.load(sid)
    assert restored.damaged
    text = " ".join(restored.problems + restored.repairs)
    assert f"4 missing (3-4, {last - 1}-{last})" in text and "1 altered" in text, text
    assert "HACKED" not in str(restored.messages)
    # the altered result is gone, its call keeps a 'not run' result: the history stays valid
    tool = [m for m in restored.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool] == ["c2", "c1"]
    assert tool[1].content.startswith("not run")
    # resuming says so, and goes on
    again = make_agent(workspace, [ScriptTurn(text="ok")])
    handle = await open_session(again, continue_=True)
    try:
        assert any("damaged" in n for n in handle.notices), handle.notices
        assert again.messages == restored.messages
    finally:
        await handle.close()


async def test_refusals(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no session to continue"):
        await open_session(make_agent(workspace, []), continue_=True)
    agent = make_agent(workspace, [ScriptTurn(text="hi")])
    await drive(agent, "hello")
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(StoreError, match="belongs to"):
        await open_session(make_agent(other, []), resume=agent.session_id)
    with pytest.raises(StoreError, match="no session"):
        await open_session(make_agent(workspace, []), resume="s-nothing")
