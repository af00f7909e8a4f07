"""Without the write watch, the app says once that undo cannot tell a person's edits from a command's."""

from __future__ import annotations

import pytest

from monkey.checkpoints.watch import DISABLE_ENV
from tests.support.watch import SAID


async def test_the_app_says_it_once(app_for, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from tests.support.app import settle, type_and_send
    from tests.support.app import notice_text

    monkeypatch.setenv(DISABLE_ENV, "1")  # the environment a person sets; the watch then never starts
    app = app_for([{"text": "one"}, {"text": "two"}])
    async with app.run_test(size=(120, 36)) as pilot:
        for text in ("first", "second"):
            await type_and_send(pilot, app, text)
            await settle(pilot, app)
        assert notice_text(app).count(SAID) == 1, notice_text(app)
        await app.action_quit()
