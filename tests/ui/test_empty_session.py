"""Opening the app and quitting, or running commands that change nothing, stores no session."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke_async
from tests.support.app import settle, type_and_send

SIZE = (120, 36)


async def test_commands_that_change_nothing_store_no_session(app_for, workspace: Path, monkey_home: Path) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for command in ("/compact", "/undo", "/approvals", "/help", "/clear"):
            await type_and_send(pilot, app, command)
            await settle(pilot, app)
        await app.action_quit()
    listing = await invoke_async(["sessions", "list", "--all", "--json"], home=monkey_home)
    assert listing.stdout.strip() == "[]", listing.stdout
