"""A fork's undo covers only its own changes, and the original's undo only the original's:
real checkpoints in a real repository, the command line run in this process (``monkey agent``
on the scripted backend, ``monkey sessions fork``, ``monkey undo``) and ``/undo`` in the fork's
own session, built as the command line builds it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from monkey.permissions.requests import HeadlessApprover
from monkey.session.replies import Note
from monkey.session.setup import SessionRequest, build_agent
from tests.support.cli import Run, invoke, write_script
from tests.support.script import call_turn


def _task(ws: Path, home: Path, script: Path, turns: list[dict], prompt: str, *flags: str) -> Run:  # type: ignore[type-arg]
    write_script(script, [*turns, {"text": "done"}])
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            prompt,
            *flags,
        ],
        home=home,
    )
    assert run.returncode == 0, run.stderr
    return run


def _slash_undo(ws: Path, script: Path, session_id: str) -> list[str]:
    """``/undo`` in session ``session_id``, opened as ``monkey agent --resume`` opens it; what it said."""
    write_script(script, [{"text": "unused"}])

    async def run() -> list[str]:
        setup = build_agent(
            SessionRequest(workspace=ws, backend="scripted", script=str(script), no_approval=True), HeadlessApprover()
        )
        session = setup.session(show=lambda event: None, tell=lambda text, level: None)
        await session.open(resume=session_id)
        try:
            assert session.agent.session_id == session_id
            replies = await session.command("/undo")
        finally:
            await session.close()
        return [r.text for r in replies if isinstance(r, Note)]

    return asyncio.run(run())


def _checkpoints(ws: Path, home: Path) -> list[dict]:  # type: ignore[type-arg]
    listing = invoke(["checkpoints", "--json", "--cwd", str(ws)], home=home)
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)["checkpoints"]  # type: ignore[no-any-return]


def test_a_forks_undo_is_its_own_and_the_originals_is_the_originals(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    ws, home, script = workspace, monkey_home, tmp_path / "script.json"
    first = _task(ws, home, script, [call_turn("file_write", path="a.txt", content="the original's a\n")], "make a")
    parent = first.of_type("session_started")[0]["session_id"]
    _task(
        ws,
        home,
        script,
        [call_turn("file_write", path="b.txt", content="the original's b\n")],
        "make b",
        "--resume",
        parent,
    )
    forked = invoke(["sessions", "fork", parent, "--at", "1"], home=home)
    assert forked.returncode == 0, forked.stderr
    fork = forked.stdout.split("after turn 1: ")[1].split()[0]
    _task(
        ws,
        home,
        script,
        [
            call_turn("file_edit", path="a.txt", old_string="original's", new_string="fork's"),
            call_turn("file_write", path="c.txt", content="the fork's c\n"),
        ],
        "change a, make c",
        "--resume",
        fork,
    )
    assert (ws / "a.txt").read_text() == "the fork's a\n" and (ws / "b.txt").exists() and (ws / "c.txt").exists()
    by_session = {(c["session_id"], tuple(c["paths"])) for c in _checkpoints(ws, home)}
    assert by_session == {(parent, ("a.txt",)), (parent, ("b.txt",)), (fork, ("a.txt",)), (fork, ("c.txt",))}, (
        "the fork's copied events bring none of the original's checkpoints with them"
    )

    # The original's undo passes over the fork's later changes: its own latest is b.txt.
    undone = invoke(["undo", "--session", parent, "--steps", "1", "--json", "--cwd", str(ws)], home=home)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["removed"] == ["b.txt"]
    assert (ws / "a.txt").read_text() == "the fork's a\n" and (ws / "c.txt").exists()

    # /undo in the fork: its latest change (c.txt), nothing of the original's.
    said = _slash_undo(ws, script, fork)
    assert said[0] == "undone: removed c.txt", said
    assert not (ws / "c.txt").exists() and (ws / "a.txt").read_text() == "the fork's a\n"
    # monkey undo --session FORK: all that is left of the fork's, which puts a.txt back as the original left it
    undone = invoke(["undo", "--session", fork, "--json", "--cwd", str(ws)], home=home)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["paths"] == ["a.txt"] and json.loads(undone.stdout)["removed"] == []
    assert (ws / "a.txt").read_text() == "the original's a\n", "reverted to the original's content, not removed"
    # Nothing of the fork's is left: the original's change to a.txt is refused, by both ways to undo.
    said = _slash_undo(ws, script, fork)
    assert said == [f"nothing to undo in session {fork}: no applied change monkey made is left"], said
    again = invoke(["undo", "--session", fork, "--cwd", str(ws)], home=home)
    assert again.returncode != 0 and "nothing to undo in session" in again.stderr
    assert (ws / "a.txt").read_text() == "the original's a\n"

    # The original's own undo still has its a.txt.
    undone = invoke(["undo", "--session", parent, "--json", "--cwd", str(ws)], home=home)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["removed"] == ["a.txt"] and not (ws / "a.txt").exists()
