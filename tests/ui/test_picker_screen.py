"""The session picker over sessions recorded by real scripted runs in the real store."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from monkey.store import Recorder, SessionStore
from monkey.ui.screens.picker import SessionPickerScreen
from tests.support.screen_data import SESSION_IDS, ScreenApp, fixed_time, record_sessions, shown_text


async def _rows(pilot, app: ScreenApp, count: int) -> DataTable:
    for _ in range(100):
        await pilot.pause(0.02)
        table = app.screen.query_one("#sessions", DataTable)
        if table.row_count == count:
            return table
    raise AssertionError(f"expected {count} rows")


async def test_enter_resumes_the_selected_session(workspace: Path) -> None:
    await record_sessions(workspace)
    async with await SessionStore.open() as store:
        app = ScreenApp(SessionPickerScreen(store, workspace.resolve(), format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            table = await _rows(pilot, app, 3)
            ids = [str(table.get_row_at(i)[5]) for i in range(3)]
            assert ids == SESSION_IDS[::-1], "most recent first"
            titles = [str(table.get_row_at(i)[1]) for i in range(3)]
            assert titles[1] == "explain [bold]it[/bold]\\x1b]0;pwned\\x07", "escaped, not markup"
            await pilot.press("down", "enter")
            await pilot.pause()
    assert app.results == [SESSION_IDS[1]]


async def test_escape_cancels(workspace: Path) -> None:
    await record_sessions(workspace)
    async with await SessionStore.open() as store:
        app = ScreenApp(SessionPickerScreen(store, workspace.resolve(), format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            await _rows(pilot, app, 3)
            await pilot.press("escape")
            await pilot.pause()
    assert app.results == [None]


async def test_delete_needs_a_confirmation(workspace: Path) -> None:
    await record_sessions(workspace)
    async with await SessionStore.open() as store:
        app = ScreenApp(SessionPickerScreen(store, workspace.resolve(), format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            await _rows(pilot, app, 3)
            await pilot.press("x")
            assert "y deletes" in shown_text(app.screen.query_one("#status", Static))
            await pilot.press("n")  # any other key keeps it
            await pilot.pause()
            assert await store.get(SESSION_IDS[2]) is not None
            await pilot.press("delete", "y")
            table = await _rows(pilot, app, 2)
            assert await store.get(SESSION_IDS[2]) is None, "gone from the store"
            assert [s.id for s in await store.list_sessions(str(workspace.resolve()))] == SESSION_IDS[1::-1]
            assert str(table.get_row_at(0)[5]) == SESSION_IDS[1]
            await pilot.press("enter")
            await pilot.pause()
    assert app.results == [SESSION_IDS[1]]


async def test_an_empty_workspace_says_so(workspace: Path) -> None:
    async with await SessionStore.open() as store:
        app = ScreenApp(SessionPickerScreen(store, workspace, format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause(0.2)
            assert "No sessions" in shown_text(app.screen.query_one("#status", Static))
            await pilot.press("enter", "x", "y", "escape")
            await pilot.pause()
    assert app.results == [None]


async def test_a_session_being_written_is_not_deleted(workspace: Path) -> None:
    from monkey.events import SessionStarted
    from monkey.store.lock import SessionLock

    await record_sessions(workspace)
    async with await SessionStore.open() as store:
        owner = SessionLock.acquire(store.locks, "s-live-0001")  # this process owns it: the app's own session
        assert owner is not None
        live = Recorder(store, "s-live-0001")
        live.add(
            SessionStarted(session_id="s-live-0001", workspace=str(workspace.resolve()), backend="scripted", model="m")
        )
        await live.flush()
        app = ScreenApp(SessionPickerScreen(store, workspace, format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            table = await _rows(pilot, app, 4)
            assert str(table.get_row_at(0)[5]) == "s-live-0001" and str(table.get_row_at(0)[4]) == "active"
            await pilot.press("x", "y")
            await pilot.pause()
            assert await store.get("s-live-0001") is not None
            assert table.row_count == 4
            await pilot.press("escape")
        await live.close()
        owner.release()
    assert app.results == [None]


async def test_slash_searches_the_sessions_text(workspace: Path) -> None:
    await record_sessions(workspace)
    async with await SessionStore.open() as store:
        app = ScreenApp(SessionPickerScreen(store, workspace.resolve(), format_time=fixed_time))
        async with app.run_test(size=(120, 36)) as pilot:
            await _rows(pilot, app, 3)
            await pilot.press("slash", *"readme undo", "enter")
            table = await _rows(pilot, app, 1)
            assert str(table.get_row_at(0)[5]) == SESSION_IDS[2]
            status = shown_text(app.screen.query_one("#status", Static))
            assert "turn 1" in status and "[README]" in status and "[undo]" in status
            await pilot.press("slash", *"nowhere", "enter")
            await pilot.pause(0.2)
            assert "No session here holds nowhere" in shown_text(app.screen.query_one("#status", Static))
            await pilot.press("slash", *["backspace"] * 7, "enter")
            await _rows(pilot, app, 3)
            await pilot.press("slash", *"picker 0002", "enter")  # an answer's text
            table = await _rows(pilot, app, 1)
            await pilot.press("enter")
            await pilot.pause()
    assert app.results == [SESSION_IDS[1]]
