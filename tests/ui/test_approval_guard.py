"""Keys typed ahead never answer an approval dialog.

A person types a message while the agent works; the dialog opens between two of their keys.
What they type in the next moments (here "please stop that", whose ``a`` would approve the
command for the whole session) must not answer it. The guard's clock is the test's, so what
happens does not depend on how fast the machine is.
"""

from __future__ import annotations

from pathlib import Path

from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import SHELL_TWICE, SIZE, settle, type_and_send, until, wait_for_screen


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_keys_typed_as_the_dialog_opens_do_not_answer_it(app_for, workspace: Path) -> None:
    clock = Clock()
    app = app_for(SHELL_TWICE, approval_guard=0.4, approval_clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "run git status twice")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press(*"please stop that")  # typed on, not knowing the dialog is there
        clock.now += 0.3
        await pilot.press("a", "y", "n")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and not screen.asking_reason, "a typed-ahead key answered"
        assert app.agent.policy.grants == {}
        keys = str(screen.query_one("#keys").render())
        assert "look first" in keys
        clock.now += 0.4  # the keyboard has now been quiet for the guard's 0.4 s
        await until(
            pilot,
            lambda: "y approve once" in str(screen.query_one("#keys").render()),
            "the key line saying so on its next tick",
        )
        await pilot.press("y")  # a fresh key press, made looking at the dialog
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, ApprovalScreen) and app.screen is not screen and bool(app.screen.opened_at)
            ),  # its guard starts when it mounts, by the test's clock
            "the second command asking again (nothing was granted): a new dialog",
        )
        clock.now += 1.0
        await pilot.press("y")
        await settle(pilot, app)
        assert [b.state for b in app.transcript.query(ToolBlock)] == ["ok", "ok"]
        assert app.agent.policy.grants == {}


async def test_escape_stops_at_once_even_inside_the_guard(app_for) -> None:
    clock = Clock()
    app = app_for(SHELL_TWICE, approval_guard=0.4, approval_clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "run git status twice")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("escape")  # denying is always safe
        await settle(pilot, app)
        assert [b.state for b in app.transcript.query(ToolBlock)] == ["denied"]


async def test_steady_typing_keeps_the_guard_up_until_the_keyboard_is_quiet(workspace: Path) -> None:
    """Each key pressed while the guard lasts starts its wait again: a later key of someone typing
    on does not answer, however long ago the dialog opened."""
    from monkey.permissions.requests import Decision
    from tests.support.screen_data import ScreenApp, edit_request

    clock = Clock()
    app = ScreenApp(ApprovalScreen(edit_request(workspace), guard=0.4, clock=clock))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        for key in "keep typing, you see":  # a key every 0.15 s, for 3 s: never 0.4 s quiet
            clock.now += 0.15
            await pilot.press(key)
        clock.now += 0.15
        await pilot.press("y")
        await pilot.pause()
        assert app.results == [] and app.screen is screen and not screen.armed
        clock.now += 0.4  # now quiet for the guard's 0.4 s since the last key
        await pilot.press("y")
        await pilot.pause()
    assert app.results == [Decision(approved=True, by="user")]


def test_the_guard_by_explicit_timestamps(workspace: Path) -> None:
    """The guard's rule on its own: quiet for ``guard`` seconds after opening (or the last key)."""
    from tests.support.screen_data import edit_request

    clock = Clock()
    dialog = ApprovalScreen(edit_request(workspace), guard=0.4, clock=clock)
    assert not dialog.armed  # not shown yet
    dialog.opened_at = dialog.quiet_since = 100.0  # as on_mount does
    dialog.note_key(100.3)
    clock.now = 100.5
    assert not dialog.armed  # 0.5 s after opening, but only 0.2 s after the last key
    dialog.note_key(100.6)
    clock.now = 100.99
    assert not dialog.armed
    clock.now = 101.0
    assert dialog.armed
    dialog.note_key(101.05)  # once the keys work, a key pressed is an answer, not a restart
    assert dialog.armed
