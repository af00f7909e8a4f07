"""``/stats`` in the app (Pilot): the session's figures and today's, from the store the app writes."""

from __future__ import annotations

from tests.support.app import SIZE, notice_text, settle, type_and_send


async def test_slash_stats_says_this_session_and_today(app_for) -> None:  # type: ignore[no-untyped-def]
    app = app_for([{"text": "Hello.", "usage": {"input_tokens": 100, "output_tokens": 5, "cost_usd": 0.5}}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/stats")
        await pilot.pause(0.2)
        assert "this session: nothing stored yet" in notice_text(app)
        await type_and_send(pilot, app, "say hello")
        await settle(pilot, app)
        await type_and_send(pilot, app, "/stats")
        await pilot.pause(0.2)
        said = " ".join(notice_text(app).split())
        assert (
            "this session: 1 turn, 1 model call, 100 tokens in (0% from the cache), 5 out, $0.50; "
            "0 tool calls (0 ok, 0 failed, 0 denied, 0 cancelled); +0 -0 lines"
        ) in said
        assert "today, 1 session in every workspace: 1 turn," in said
        await type_and_send(pilot, app, "/stats now")
        await pilot.pause(0.2)
        assert "usage: /stats" in notice_text(app)
