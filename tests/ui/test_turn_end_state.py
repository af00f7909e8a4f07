"""What the screen says when a turn ends early or a conversation starts again: a tool call cut
short says it was cancelled (not "running" forever), and ``/clear`` starts the totals again."""

from __future__ import annotations

import sys

from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import settle, type_and_send

SIZE = (120, 36)
SLEEP = [
    {
        "text": "",
        "tool_calls": [
            {
                "name": "shell_execute",
                "arguments": {"command": f'{sys.executable} -c "import time; time.sleep(60)"', "timeout": 120},
            }
        ],
    },
    {"text": "never"},
]


async def test_escape_during_a_command_marks_its_block_cancelled(app_for) -> None:
    app = app_for(SLEEP, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "sleep a while")
        for _ in range(200):
            blocks = list(app.transcript.query(ToolBlock))
            if blocks and blocks[0].state == "running":
                break
            await pilot.pause(0.05)
        [block] = app.transcript.query(ToolBlock)
        assert block.state == "running"
        await pilot.press("escape")
        await settle(pilot, app)
        assert block.state == "cancelled" and "cancelled" in str(block.title)
        assert app.last_reason == "cancelled"


async def test_clear_starts_the_totals_again(app_for) -> None:
    app = app_for([{"text": "Hello there, a longer answer than one token."}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "say hello")
        await settle(pilot, app)
        status = app.status
        assert status.tokens_in > 0 and status.tokens_out > 0 and status.iteration == 1
        await type_and_send(pilot, app, "/clear")
        await settle(pilot, app)
        assert (status.tokens_in, status.tokens_out, status.cost, status.context, status.iteration) == (
            0,
            0,
            0.0,
            None,
            0,
        )
        assert "↑0 ↓0" in str(status.render())
