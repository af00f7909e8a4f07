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
from tests.ui.conftest import settle, type_and_send
from tests.ui.test_app import SHELL_TWICE, SIZE, wait_for_screen


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
        clock.now += 0.2  # the dialog has now been on screen for the guard's 0.4 s
        for _ in range(100):  # the key line says so on its next tick
            if "y approve once" in str(screen.query_one("#keys").render()):
                break
            await pilot.pause(0.05)
        assert "y approve once" in str(screen.query_one("#keys").render())
        await pilot.press("y")  # a fresh key press, made looking at the dialog
        for _ in range(200):  # the second command asks again (nothing was granted): a new dialog
            if isinstance(app.screen, ApprovalScreen) and app.screen is not screen:
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, ApprovalScreen) and app.screen is not screen
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
