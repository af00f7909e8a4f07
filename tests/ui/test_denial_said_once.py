"""A denial is said once: in the call's block (its state and the reason), not again as a notice
and again as the turn's end."""

from __future__ import annotations

from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import settle, type_and_send, wait_for_screen

TURNS = [
    {"text": "Running.", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch x"}}]},
    {"text": "OK, I will not."},
]


def said(app, words: str) -> int:  # type: ignore[no-untyped-def]
    texts = [str(w.render()) for w in app.transcript.query(".notice")]
    texts += [b.shown for b in app.transcript.query(ToolBlock)]
    return sum(words in t for t in texts)


async def test_esc_in_the_dialog_says_the_stop_once(app_for) -> None:
    app = app_for(TURNS)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "run it")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("escape")
        await settle(pilot, app)
        [block] = app.transcript.query(ToolBlock)
        assert block.state == "denied"
        assert said(app, "the user stopped the turn") == 1
        assert app.last_reason == "denied"


async def test_a_reason_is_said_once(app_for) -> None:
    app = app_for(TURNS)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "run it")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("n", *"no thanks", "enter")
        await settle(pilot, app)
        assert said(app, "no thanks") == 1
