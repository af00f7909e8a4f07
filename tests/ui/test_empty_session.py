"""Opening the app and quitting, or running commands that change nothing, stores no session."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.procs import store_threads
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


async def test_quitting_before_the_session_opens_builds_nothing_and_leaves_no_store_open(
    app_for, workspace: Path, monkey_home: Path
) -> None:
    """Ctrl-D as the first frame is drawn, before the agent is built (just after that frame): the app
    ends there. Before, the session opened after the quit and nothing closed it: the store's connection
    thread (aiosqlite's is not a daemon) kept the process alive after the terminal was restored."""
    import monkey.ui.app
    from monkey.ui.app import MonkeyApp

    class QuitAtOnce(MonkeyApp):
        CSS_PATH = str(Path(monkey.ui.app.__file__).with_name("app.tcss"))  # not next to this file

        async def on_mount(self) -> None:
            await super().on_mount()  # it asks for the session to be opened after the first frame
            await self.action_quit()  # the person quits first

    before = store_threads()
    app = app_for([{"text": "x"}], app_class=QuitAtOnce)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
    try:
        assert app._agent is None, "nothing was built after the quit"
        for thread in store_threads() - before:
            await asyncio.to_thread(thread.join, 30)  # a store closed meanwhile: its thread ends once it has closed
        assert not store_threads() - before, "a store is still open: its thread would keep monkey alive"
    finally:  # failing, it closes what it found open (else the test run itself could not exit)
        if app._live is not None and app._live.handle is not None:
            await app._live.handle.close()
    listing = await invoke_async(["sessions", "list", "--all", "--json"], home=monkey_home)
    assert listing.stdout.strip() == "[]", listing.stdout
