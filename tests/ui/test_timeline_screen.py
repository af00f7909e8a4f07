"""The checkpoint timeline over checkpoints made by the real agent loop in a real git repo."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from monkey.ui.screens.timeline import TimelineScreen
from tests.support.screen_data import SESSION, ScreenApp, fixed_time, shown_text, three_changes, timeline_loaded


async def _settle(pilot, app: ScreenApp, count: int) -> None:
    """Wait for the undo worker to report back ``count`` undos (or a refusal)."""
    for _ in range(100):
        await pilot.pause(0.05)
        screen = app.screen
        if isinstance(screen, TimelineScreen) and not screen.busy and len(screen.applied) >= count:
            return


async def test_lists_the_changes_and_shows_a_diff(workspace: Path, monkey_home: Path) -> None:
    cps = await three_changes(workspace, monkey_home)
    app = ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time))
    async with app.run_test(size=(120, 36)) as pilot:
        await timeline_loaded(pilot)
        table = app.screen.query_one("#table", DataTable)
        assert table.row_count == 3
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(3)]
        assert [r[2] for r in rows] == ["file_write", "file_edit", "file_write"]
        assert rows[1][4] == "+1 -1" and rows[2][5] == "src/app.py"
        await pilot.press("up", "enter")
        await pilot.pause()
        body = shown_text(app.screen.query_one("#detail-body", Static))
        assert "+TWO [red]x[/red]" in body and "-two" in body
        await pilot.press("escape")  # closes the diff first
        assert app.results == []
        await pilot.press("escape")
    assert app.results == [[]]


async def test_undo_puts_the_file_back_on_disk(workspace: Path, monkey_home: Path) -> None:
    cps = await three_changes(workspace, monkey_home)
    app = ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time))
    async with app.run_test(size=(120, 36)) as pilot:
        await timeline_loaded(pilot)
        await pilot.press("u")
        await _settle(pilot, app, 1)
        assert not (workspace / "src/app.py").exists()
        assert (workspace / "notes.txt").read_text() == "one\nTWO [red]x[/red]\nthree\n"
        table = app.screen.query_one("#table", DataTable)
        assert str(table.get_row_at(2)[3]) == "undone", "the list refreshed"
        await pilot.press("u")
        await _settle(pilot, app, 2)
        assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
        await pilot.press("escape")
    [applied] = app.results
    assert [e.paths for e in applied] == [["src/app.py"], ["notes.txt"]]
    assert app.undone == applied, "each undo was also posted to the app"


async def test_restore_refused_then_forced(workspace: Path, monkey_home: Path) -> None:
    cps = await three_changes(workspace, monkey_home)
    (workspace / "notes.txt").write_text("one\nTWO\nthree\nmine, by hand\n")  # changed since
    app = ScreenApp(TimelineScreen(cps, SESSION, format_time=fixed_time))
    async with app.run_test(size=(120, 36)) as pilot:
        await timeline_loaded(pilot)
        await pilot.press("up", "up", "r")  # restore to the first checkpoint: notes.txt did not exist
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen.refused is not None:
                break
        screen = app.screen
        assert screen.refused is not None and screen.applied == []
        title = shown_text(screen.query_one("#detail-title", Static))
        body = shown_text(screen.query_one("#detail-body", Static))
        assert "refused" in title and "notes.txt" in title
        assert "+mine, by hand" in body
        assert (workspace / "notes.txt").read_text().endswith("mine, by hand\n"), "nothing changed"
        assert (workspace / "src/app.py").exists()
        await pilot.press("f")
        await _settle(pilot, app, 1)
        assert not (workspace / "notes.txt").exists() and not (workspace / "src/app.py").exists()
        assert screen.applied[0].forced
        await pilot.press("escape")
    assert app.results[0][0].forced


async def test_nothing_to_undo_is_said_plainly(workspace: Path, monkey_home: Path) -> None:
    from monkey.checkpoints.api import Checkpoints

    app = ScreenApp(TimelineScreen(Checkpoints(workspace, home=monkey_home), format_time=fixed_time))
    async with app.run_test(size=(120, 36)) as pilot:
        await timeline_loaded(pilot)
        assert "No checkpoints yet" in shown_text(app.screen.query_one("#detail-title", Static))
        await pilot.press("u", "r", "d", "f")
        await pilot.pause(0.3)
        assert app.screen.applied == []
        await pilot.press("escape")
    assert app.results == [[]]
