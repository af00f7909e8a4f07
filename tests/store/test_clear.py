"""``/clear`` is a boundary that is stored: a resumed session and a fork after it send the model
nothing from before it, a fork at a turn before it has the conversation as it was then.

The sessions are real (the store, the scripted backend, the session layer as the command line
builds it); what the model is sent is what the scripted backend received."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pexpect
import pytest

from monkey.cli import main
from monkey.messages import Message
from monkey.permissions.requests import HeadlessApprover
from monkey.session.session import Session
from monkey.session.setup import SessionRequest, build_agent
from monkey.store import SessionStore
from tests.support.agent import db
from tests.support.cli import stored_events, write_script
from tests.support.pty import spawn_repl


def _session(workspace: Path, script: Path, answers: list[str]) -> Session:
    write_script(script, [{"text": text} for text in answers])
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    return setup.session(show=lambda event: None, tell=lambda text, level: None)


def _words(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def _sent(session: Session) -> list[list[str]]:
    """The messages of each request the scripted backend received."""
    return [_words(request.messages) for request in session.agent.backend.requests]  # type: ignore[attr-defined]


async def _cleared_between(workspace: Path, script: Path) -> str:
    """A session: turn 1, ``/clear``, turns 2 and 3; its id."""
    session = _session(workspace, script, ["answer one", "answer two", "answer three"])
    await session.open()
    try:
        await session.send("before the clear")
        said = await session.command("/clear")
        assert any(getattr(r, "text", "") == "(new conversation)" for r in said)
        await session.command("/clear")  # nothing left to clear: nothing more to store
        await session.send("after the clear")
        await session.send("later still")
    finally:
        await session.close()
    assert _sent(session) == [
        ["before the clear"],
        ["after the clear"],
        ["after the clear", "answer two", "later still"],
    ]
    return session.agent.session_id


async def test_clear_is_stored_and_a_resume_sends_nothing_from_before_it(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    sid = await _cleared_between(workspace, tmp_path / "s.json")
    conn = db(monkey_home)
    try:
        stored = stored_events(conn, sid)
    finally:
        conn.close()
    kinds = [kind for kind, _ in stored]
    assert kinds.count("conversation_cleared") == 1
    assert json.loads(stored[kinds.index("conversation_cleared")][1])["messages"] == 2, "the question and its answer"
    assert kinds.index("conversation_cleared") < kinds.index("turn_started", kinds.index("turn_completed"))
    again = _session(workspace, tmp_path / "s.json", ["answer four"])
    await again.open(continue_=True)
    try:
        assert again.agent.session_id == sid
        await again.send("one more")
    finally:
        await again.close()
    assert _sent(again) == [["after the clear", "answer two", "later still", "answer three", "one more"]]


async def test_forks_at_turns_before_and_after_the_clear(workspace: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    sid = await _cleared_between(workspace, tmp_path / "s.json")

    async def fork(at: str) -> list[str]:
        capsys.readouterr()
        assert await asyncio.to_thread(main, ["sessions", "fork", sid, "--at", at]) == 0
        fork_id = capsys.readouterr().out.split(f"after turn {at}: ")[1].split()[0]
        async with await SessionStore.open() as store:
            return _words((await store.load(fork_id)).messages)

    assert await fork("1") == ["before the clear", "answer one"], (
        "the turn before the clear, as it was then (the clear after it is not part of it)"
    )
    assert await fork("2") == ["after the clear", "answer two"], "nothing from before the clear"
    assert await fork("3") == ["after the clear", "answer two", "later still", "answer three"]
    # A fork after the clear, continued: the model is sent the fork's conversation only.
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["sessions", "fork", sid, "--at", "2"]) == 0
    fork_id = capsys.readouterr().out.split("after turn 2: ")[1].split()[0]
    going = _session(workspace, tmp_path / "s.json", ["answer in the fork"])
    await going.open(resume=fork_id)
    try:
        await going.send("in the fork")
    finally:
        await going.close()
    assert _sent(going) == [["after the clear", "answer two", "in the fork"]]


@pytest.mark.pty
def test_a_clear_survives_a_kill_right_after_it(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    import asyncio

    script = write_script(tmp_path / "repl.json", [{"text": "the first answer"}])
    child = spawn_repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("a question to forget")
    child.expect_exact("the first answer")
    child.sendline("/clear")
    child.expect_exact("(new conversation)")
    child.kill(signal.SIGKILL)  # nothing more is written: what the clear stored is all there is
    child.expect(pexpect.EOF)
    child.close()

    async def resume() -> list[list[str]]:
        again = _session(workspace, tmp_path / "s.json", ["a fresh answer"])
        await again.open(continue_=True)
        try:
            await again.send("a new question")
        finally:
            await again.close()
        return _sent(again)

    assert asyncio.run(resume()) == [["a new question"]], "the cleared conversation does not come back"
