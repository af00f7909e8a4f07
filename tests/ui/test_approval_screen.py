"""The approval dialog driven by key presses, on requests built by the real tools."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from monkey.permissions.requests import Decision
from monkey.ui.screens.approval import STOP_REASON, ApprovalScreen
from tests.support.screen_data import HIDDEN_SHELL_LINE, ScreenApp, edit_request, shell_request, shown_text


async def _answer(request, *keys: str) -> tuple[ScreenApp, Decision]:
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    assert len(app.results) == 1, "dismissed exactly once"
    return app, app.results[0]


async def test_y_approves_once(workspace: Path) -> None:
    _, decision = await _answer(edit_request(workspace), "y")
    assert decision == Decision(approved=True, by="user")


async def test_a_approves_for_the_session_and_says_what_it_covers(workspace: Path) -> None:
    request = shell_request(workspace, "git status --short")
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        grant = str(app.screen.query_one("#grant", Static).render())
        assert "commands starting with `git status`" in grant
        await pilot.press("a")
        await pilot.pause()
    [decision] = app.results
    assert decision.approved and decision.scope == "session" and decision.by == "user"
    assert request.grant in decision.reason


async def test_n_then_a_reason_denies_and_tells_the_model(workspace: Path) -> None:
    # "y" and "a" typed into the reason must not approve anything
    _, decision = await _answer(edit_request(workspace), "n", *"use ruff, yes always", "enter")
    assert decision == Decision(approved=False, by="user", reason="the user said: use ruff, yes always")


async def test_n_with_no_reason_stops_the_turn(workspace: Path) -> None:
    _, decision = await _answer(edit_request(workspace), "n", "enter")
    assert decision == Decision(approved=False, by="user", reason=STOP_REASON, stop=True)


async def test_escape_denies_and_stops(workspace: Path) -> None:
    _, decision = await _answer(shell_request(workspace), "escape")
    assert decision == Decision(approved=False, by="user", reason=STOP_REASON, stop=True)
    _, decision = await _answer(shell_request(workspace), "n", "x", "escape")
    assert decision.stop and not decision.approved


async def test_hidden_characters_are_shown_and_flagged(workspace: Path) -> None:
    request = shell_request(workspace)
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        screen = app.screen
        command = str(screen.query_one("#command", Static).render())
        warnings = str(screen.query_one("#warnings", Static).render())
        assert "\\u202e" in command and "\\x1b[2K" in command and "\x1b" not in command
        assert "right-to-left override" in warnings and "escape (ESC)" in warnings and "shell" in warnings
        # a shell line with shell syntax is only ever granted for that exact line
        assert "this exact command line only" in str(screen.query_one("#grant", Static).render())
        assert not screen.query_one("#reason", Input).display
        await pilot.press("y")
    assert app.results == [Decision(approved=True, by="user")]
    assert request.arguments["command"] == HIDDEN_SHELL_LINE


async def test_model_text_is_never_markup(workspace: Path) -> None:
    request = edit_request(workspace)
    assert "[bold red]not markup[/]" in request.summary
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert "[bold red]not markup[/]" in shown_text(app.screen.query_one("#diff", Static))
        await pilot.press("escape")


async def test_no_session_grant_when_the_request_offers_none(workspace: Path) -> None:
    from dataclasses import replace

    request = replace(edit_request(workspace), grant="")  # what the loop sends for a very large file
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert app.results == [], "a does nothing without a grant"
        await pilot.press("y")
    assert app.results == [Decision(approved=True, by="user")]


async def test_a_long_diff_scrolls_and_keys_still_answer(workspace: Path) -> None:
    from tests.support.screen_data import request_for

    (workspace / "big.py").write_text("".join(f"line_{i} = {i}\n" for i in range(400)))
    request = request_for(
        workspace, "file_write", {"path": "big.py", "content": "".join(f"line_{i} = {i * 2}\n" for i in range(400))}
    )
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        box = app.screen.query_one("#diff-box")
        assert box.has_focus and box.max_scroll_y > 0
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert box.scroll_y > 0
        await pilot.press("y")
    assert app.results == [Decision(approved=True, by="user")]


async def test_a_multi_line_command_is_shown_on_one_line_and_flagged(workspace: Path) -> None:
    request = shell_request(workspace, "ls\nrm -rf ~/.ssh # \u200b")
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        command = shown_text(app.screen.query_one("#command", Static))
        warnings = shown_text(app.screen.query_one("#warnings", Static))
        assert "ls\\nrm -rf ~/.ssh # \\u200b" in command
        assert "newline" in warnings and "zero width space" in warnings
        await pilot.press("n", *"no", "enter")
    assert app.results == [Decision(approved=False, by="user", reason="the user said: no")]


def _eleven_line_diff(workspace: Path):
    (workspace / "calc.py").write_text("".join(f"line {i}\n" for i in range(20)))
    from tests.support.screen_data import request_for

    return request_for(workspace, "file_edit", {"path": "calc.py", "old_string": "line 3\n", "new_string": "LINE 3\n"})


def _on_screen(app: ScreenApp, selector: str) -> bool:
    widget = app.screen.query_one(selector)
    dialog = app.screen.query_one("#dialog")
    return (
        widget.region.height > 0
        and dialog.region.contains_region(widget.region)
        and widget.region.bottom <= app.size.height
    )


async def test_at_80_by_24_the_keys_and_grant_lines_stay_in_view_and_the_diff_scrolls(workspace: Path) -> None:
    request = _eleven_line_diff(workspace)
    assert len(request.summary.splitlines()) >= 11
    app = ScreenApp(ApprovalScreen(request, guard=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        assert _on_screen(app, "#keys") and _on_screen(app, "#grant")
        assert "n deny" in shown_text(app.screen.query_one("#keys", Static))
        box = app.screen.query_one("#diff-box")
        assert box.max_scroll_y > 0  # the diff shrank and scrolls
        await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert box.scroll_y > 0
        assert _on_screen(app, "#keys") and _on_screen(app, "#grant")
        await pilot.press("n")  # the reason box opens: it and the keys stay in view too
        await pilot.pause(0.2)
        assert _on_screen(app, "#reason") and _on_screen(app, "#keys")
        await pilot.press(*"no", "enter")
        await pilot.pause()
    assert app.results == [Decision(approved=False, by="user", reason="the user said: no")]


async def test_a_short_diff_is_not_shrunk(workspace: Path) -> None:
    app = ScreenApp(ApprovalScreen(edit_request(workspace), guard=0))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        assert app.screen.query_one("#diff-box").max_scroll_y == 0
