"""The event pane driven the way a person does: a highlighted row moved with the keys or
picked with the mouse, Enter for the event's JSON, Esc to close it and to leave the list."""

from __future__ import annotations

from textual.widgets import Input, Static

from monkey.events import TextDelta, ToolOutput, Usage
from monkey.ui.widgets.event_pane import EventPane
from monkey.ui.widgets.prompt_input import PromptInput

SIZE = (120, 36)


def some_events(n: int) -> list:  # type: ignore[type-arg]
    return [ToolOutput(call_id=f"c{i}", text=f"line {i}\n") if i % 2 else Usage(input_tokens=i) for i in range(n)]


async def open_pane(pilot, events: list) -> EventPane:  # type: ignore[no-untyped-def, type-arg]
    app = pilot.app
    await pilot.press("ctrl+e")
    pane = app.query_one(EventPane)
    for event in events:
        pane.add(event)
    await pilot.pause(0.15)
    return pane


def log_of(pane: EventPane):  # type: ignore[no-untyped-def]
    return pane.query_one("#event-log")


def detail_text(pane: EventPane) -> str:
    """What the detail view draws (its Syntax's code)."""
    return pane.query_one("#event-detail", Static).content.code  # type: ignore[union-attr]


async def test_keys_move_the_highlight_enter_shows_the_json_and_esc_closes(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(40))
        log = log_of(pane)
        assert log.selected is None and len(log.lines) == 40
        pane.query_one("#event-filter").focus()
        await pilot.press("down")  # from the filter into the list: the last event is highlighted
        assert app.focused is log and log.selected == 40
        await pilot.press("up", "up", "enter")
        await pilot.pause(0.05)
        assert log.selected == 38 and pane.detail_shown
        assert '"type": "tool_output"' in pane.detail and '"call_id": "c37"' in pane.detail
        await pilot.press("down")  # the open detail follows the highlight
        await pilot.pause(0.05)
        assert log.selected == 39 and '"input_tokens": 38' in pane.detail
        await pilot.press("home")
        assert log.selected == 1
        await pilot.press("pagedown")
        assert log.selected > 10
        await pilot.press("end")
        assert log.selected == 40
        await pilot.press("escape")
        assert not pane.detail_shown and app.focused is log
        await pilot.press("escape")  # back where the focus came from
        assert isinstance(app.focused, Input) and app.focused.id == "event-filter"


async def test_esc_gives_the_focus_back_to_the_message_box(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(5))
        assert isinstance(app.focused, Input) and app.focused.id == "event-filter"  # ready to type a filter
        await pilot.press("escape")  # from the filter: back to the message box, the pane stays open
        assert isinstance(app.focused, PromptInput) and pane.has_class("-open")
        await pilot.click("#event-log", offset=(10, 0))
        await pilot.pause(0.05)
        await pilot.press("escape", "escape")
        assert not pane.detail_shown and isinstance(app.focused, PromptInput)


async def test_a_click_on_a_row_shows_that_event(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(6))
        await pilot.click("#event-log", offset=(10, 2))  # the third line: event 3, Usage(input_tokens=2)
        await pilot.pause(0.05)
        log = log_of(pane)
        assert app.focused is log and log.selected == 3 and pane.detail_shown
        assert '"type": "usage"' in pane.detail and '"input_tokens": 2' in pane.detail


async def test_filter_then_select(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(20))
        pane.query_one("#event-filter").focus()
        for key in "usage":
            await pilot.press(key)
        await pilot.pause(0.1)
        log = log_of(pane)
        assert list(log.seqs) == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19]
        await pilot.press("down", "up", "enter")
        await pilot.pause(0.05)
        assert log.selected == 17 and '"input_tokens": 16' in pane.detail
        # `#N` in the filter still works, and highlights the event too
        pane.query_one("#event-filter", Input).value = "#5"
        pane.query_one("#event-filter").focus()
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert '"input_tokens": 4' in pane.detail and log.selected == 5


async def test_new_events_keep_the_highlight_on_its_event_and_follow_at_the_end(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(50))
        log = log_of(pane)
        log.focus()
        await pilot.press("up", "up", "up")
        assert log.selected == 47
        row_on_screen = log.cursor_row - log.scroll_offset.y
        for event in some_events(30):
            pane.add(event)
        await pilot.pause(0.15)
        assert log.selected == 47 and log.cursor_row - log.scroll_offset.y == row_on_screen
        await pilot.press("end")  # on the last line: follow new events
        for event in some_events(3):
            pane.add(event)
        await pilot.pause(0.15)
        assert log.selected == 83 == log.seqs[-1]
        await pilot.press("enter")  # with the detail open, the highlight stays
        for event in some_events(3):
            pane.add(event)
        await pilot.pause(0.15)
        assert log.selected == 83 and log.seqs[-1] == 86 and '"input_tokens": 2' in pane.detail


async def test_a_hostile_event_is_inert_in_the_detail(app_for) -> None:
    hostile = "\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m\x9d0;title\x9c\u202eevil"
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, [TextDelta(text=hostile)])
        log = log_of(pane)
        log.focus()
        await pilot.press("enter")
        await pilot.pause(0.1)
        shown = detail_text(pane)
        assert "\\u001b]52;c;" in shown and "\\x9b31m" in shown and "\\u202e" in shown
        assert not any(ord(ch) < 0x20 and ch != "\n" or 0x7F <= ord(ch) <= 0x9F or ch == "\u202e" for ch in shown)
        screen = app.export_screenshot()
        assert "\x9b" not in screen and "\x9d" not in screen and "]52;" in screen


async def test_the_pane_opens_at_the_newest_event_with_the_filter_ready(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EventPane)
        for event in some_events(300):  # more than a screenful before the pane was ever opened
            pane.add(event)
        await pilot.press("ctrl+e")
        log = log_of(pane)
        for _ in range(100):
            if log.max_scroll_y > 0 and log.scroll_offset.y == log.max_scroll_y:
                break
            await pilot.pause(0.05)
        assert log.max_scroll_y > 0 and log.scroll_offset.y == log.max_scroll_y  # the newest in view
        assert app.focused is pane.query_one("#event-filter")
        for key in "usage":  # typed straight after Ctrl+E
            await pilot.press(key)
        await pilot.pause(0.1)
        assert pane.filter == "usage" and all("usage" in line.text for line in log.lines)


async def test_ctrl_e_goes_to_the_filter_then_closes_the_pane(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, some_events(3))
        await pilot.press("escape")
        assert isinstance(app.focused, PromptInput) and pane.has_class("-open")
        await pilot.press("ctrl+e")  # open, focus in the message box: to the filter
        await pilot.pause(0.05)
        assert app.focused is pane.query_one("#event-filter") and pane.has_class("-open")
        await pilot.press("ctrl+e")  # from inside the pane: close it
        await pilot.pause(0.05)
        assert not pane.has_class("-open") and isinstance(app.focused, PromptInput)
