"""At 80 columns the status bar keeps the checkpoint count (and mode, queue) and the header keeps
the way out (how to quit): the figures a person needs least are left out instead."""

from __future__ import annotations

from monkey.ui.widgets.app_header import AppHeader
from monkey.ui.widgets.status_bar import StatusBar
from tests.support.app import settle
from tests.support.screen_data import shown_text


async def test_at_80_columns_the_checkpoints_and_the_quit_hint_stay(app_for) -> None:
    app = app_for([{"text": "x"}], "--max-iterations", "20")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        status = app.query_one(StatusBar)
        status.model = "claude-sonnet-4-6-with-a-long-name"
        status.update_fields(
            {"tokens_in": 123456, "tokens_out": 7890, "context": 0.42, "iteration": 3, "checkpoints": 12, "queued": 2}
        )
        await pilot.pause(0.1)
        line = shown_text(status)
        assert "12 checkpoints" in line and "2 queued" in line and "…" not in line, line
        header = shown_text(app.query_one(AppHeader))
        assert "Ctrl+C twice quits" in header, header


async def test_a_wide_terminal_shows_every_figure(app_for) -> None:
    app = app_for([{"text": "x"}], "--max-iterations", "20")
    async with app.run_test(size=(200, 24)) as pilot:
        await settle(pilot, app)
        status = app.query_one(StatusBar)
        status.update_fields({"tokens_in": 123456, "context": 0.42, "iteration": 3, "checkpoints": 12})
        await pilot.pause(0.1)
        line = shown_text(status)
        for figure in ("scripted", "↑123,456", "ctx 42%", "iter 3/20", "12 checkpoints"):
            assert figure in line, line
        assert "Ctrl+E events" in shown_text(app.query_one(AppHeader))
