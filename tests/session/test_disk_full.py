"""The disk fills mid-turn: the turn stops at the first failed write of the session store,
nothing more is shown (nothing is shown that was not stored), no further tool call runs, and
the person is told the disk is full, once (not "cancelled by the user").

The database is really full: ``PRAGMA max_page_count`` on the store's own connection caps the
file at its size, so the next write that needs a page fails with SQLITE_FULL."""

from __future__ import annotations

from pathlib import Path

import msgspec

from monkey.events import Event
from monkey.permissions.requests import HeadlessApprover
from monkey.session.setup import SessionRequest, build_agent
from monkey.store import SessionStore
from tests.support.cli import write_script


async def test_a_full_disk_stops_the_turn_at_the_first_failed_write(workspace: Path, tmp_path: Path) -> None:
    (workspace / "big.txt").write_text("a line of a big file that fills pages of the database\n" * 4000)
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "big.txt"}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "after.txt", "content": "too late"}}]},
            {"text": "done"},
        ],
    )
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    shown: list[Event] = []
    told: list[tuple[str, str]] = []
    session = setup.session(show=shown.append, tell=lambda text, level: told.append((text, level)))
    handle = await session.open()
    await session.emit(session.agent.session_started())
    await handle.recorder.flush()
    pages = (await handle.store.fetchall("PRAGMA page_count"))[0][0]
    await handle.store.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from here on
    await session.send("read the big file, then write another")
    await session.close()

    assert not (workspace / "after.txt").exists(), "no tool call ran after the failed write"
    errors = [text for text, level in told if level == "error"]
    assert len(errors) == 1 and "the disk is full" in errors[0], told
    assert not any("cancelled by the user" in text for text, _ in told)
    sid = session.agent.session_id
    async with await SessionStore.open() as store:
        stored = [line for line in await store.event_lines(sid)]
    encode = msgspec.json.encode
    assert [encode(e) for e in shown] == stored, "exactly what was stored was shown, in order, and nothing after"
    assert all(e.type != "turn_completed" for e in shown)


async def test_after_the_stopped_turn_a_command_is_shown_unsaved(workspace: Path, tmp_path: Path) -> None:
    """The turn whose write failed shows nothing more; what comes after it (an undo) is shown."""
    (workspace / "big.txt").write_text("a line of a big file that fills pages of the database\n" * 4000)
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "made.txt", "content": "made\n"}}]},
            {"text": "made it"},
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "big.txt"}}]},
            {"text": "never shown"},
        ],
    )
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    shown: list[Event] = []
    session = setup.session(show=shown.append, tell=lambda text, level: None)
    handle = await session.open()
    await session.send("make a file")
    assert (workspace / "made.txt").exists()
    pages = (await handle.store.fetchall("PRAGMA page_count"))[0][0]
    await handle.store.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from here on
    await session.send("read the big file")
    assert handle.recorder.failed is not None
    before = len(shown)
    await session.command("/undo")
    await session.close()
    assert not (workspace / "made.txt").exists()
    assert any(e.type == "undo_applied" for e in shown[before:]), [e.type for e in shown[before:]]
