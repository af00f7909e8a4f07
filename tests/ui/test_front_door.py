"""The app as a person starts and leaves it: resuming, the resume hint, the exit status."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.cli import stored_session
from tests.support.app import make_app, notices

SIZE = (120, 36)


async def test_resuming_says_so_once(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    sid = await asyncio.to_thread(stored_session, workspace, monkey_home, tmp_path)  # invoke: a loop of its own
    app = make_app(workspace, tmp_path / "s.json", [{"text": "again"}], resume=sid, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if any("resumed session" in n for n in notices(app)):
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        assert [n for n in notices(app) if "resumed session" in n] == [
            next(n for n in notices(app) if n.startswith(f"resumed session {sid}"))
        ]
