"""The app steered from ``monkey web`` (its API in this process, on the same monkey home): an approval
answered in the browser closes the app's dialog and the app says who answered; a cancel from the browser
closes the dialog and ends the turn as Esc does; a mode from the browser shows in the status bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monkey.ui.screens.approval import ApprovalScreen
from tests.support.app import notice_text, settle, type_and_send, until, wait_for_screen
from tests.support.web import asgi_client, login

WRITE = [
    {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi\n"}}]},
    {"text": "the turn is over"},
]
ORIGIN = {"origin": "http://127.0.0.1:8"}


async def _post(path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    async with asgi_client() as (client, _):
        await login(client)
        answer = await client.post(path, json=body or {}, headers=ORIGIN)
        return answer.status_code, answer.json()


async def _state(path: str) -> dict[str, Any]:
    async with asgi_client() as (client, _):
        await login(client)
        return dict((await client.get(path)).json())


async def test_an_approval_answered_in_the_browser_closes_the_apps_dialog(
    app_for, workspace: Path, monkey_home: Path
) -> None:  # type: ignore[no-untyped-def]
    app = app_for(WRITE)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "write a file")
        await wait_for_screen(pilot, app, ApprovalScreen)
        sid = app.agent.session_id
        call = app.screen.request.call_id  # type: ignore[attr-defined]
        code, held = await _post(f"/api/sessions/{sid}/approvals/{call}", {"choice": "once"})
        assert (code, held["by"]) == (200, "web")
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen), "the dialog closed")
        await settle(pilot, app)
        assert "file_write: approved once in the browser" in notice_text(app)
        assert app.last_reason == "completed" and app.last_result == "the turn is over"
    assert (workspace / "a.txt").read_text() == "hi\n"


async def test_a_cancel_and_a_mode_from_the_browser_reach_the_app(app_for, workspace: Path, monkey_home: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(WRITE)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "write a file")
        await wait_for_screen(pilot, app, ApprovalScreen)
        sid = app.agent.session_id
        code, mode = await _post(f"/api/sessions/{sid}/mode", {"mode": "plan"})
        assert code == 202
        await until(pilot, lambda: app.status.mode == "plan", "the status bar in plan mode")
        assert "mode set to plan from the browser" in notice_text(app)
        assert isinstance(app.screen, ApprovalScreen), "a mode does not answer the question"
        code, cancel = await _post(f"/api/sessions/{sid}/cancel")
        assert code == 202
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen), "the dialog closed")
        await settle(pilot, app)
        assert "cancelled from the browser" in notice_text(app)
        assert app.last_reason == "cancelled" and app.last_message == "cancelled from the browser"
        for rid, said in (
            (mode["id"], "mode set to plan from the browser"),
            (cancel["id"], "cancelled from the browser"),
        ):
            assert await _state(f"/api/sessions/{sid}/requests/{rid}") == {
                "id": rid,
                "session": sid,
                "state": "done",
                "message": said,
                **({"action": "mode", "mode": "plan"} if "mode" in said else {"action": "cancel"}),
                "by": "web",
            }
    assert not (workspace / "a.txt").exists()
