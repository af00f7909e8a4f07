"""What the session's own process does with requests stored for it (``monkey web``'s cancel and mode),
whatever the store holds: each once, in order; the mode through ``/mode``'s checks (an unknown name,
``auto`` for a session that did not start in it); an unknown request refused; the session goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monkey.permissions.requests import HeadlessApprover
from monkey.session.setup import SessionRequest, build_agent
from monkey.store.control import outcome, request
from tests.support.cli import write_script


async def _done(store, sid: str, rid: str) -> dict:  # type: ignore[no-untyped-def]
    for _ in range(1200):
        _, done = await outcome(store, sid, rid)
        if done is not None:
            return done
        await asyncio.sleep(0.05)
    raise AssertionError(f"request {rid} was never done")


async def test_requests_are_done_once_in_order_through_the_modes_checks(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    setup = build_agent(SessionRequest(workspace=workspace, backend="scripted", script=str(script)), HeadlessApprover())
    told: list[tuple[str, str]] = []
    session = setup.session(show=lambda e: None, tell=lambda text, level: told.append((text, level)))
    handle = await session.open()
    try:
        await session.send("hi")
        store, sid = handle.store, session.agent.session_id
        asked = [
            await request(store, sid, body, "web")
            for body in (
                {"action": "reboot"},
                {"action": "mode", "mode": "yolo"},
                {"action": "mode", "mode": "auto"},
                {"action": "mode", "mode": "accept-edits"},
                {"action": "mode", "mode": "accept-edits"},
                {"action": "cancel"},
            )
        ]
        said = [await _done(store, sid, rid) for rid in asked]
        assert said[0] == {"ok": False, "message": "unknown request 'reboot'"}
        assert not said[1]["ok"] and "unknown mode 'yolo'" in said[1]["message"]
        assert not said[2]["ok"] and "only at the session's own terminal" in said[2]["message"]
        assert said[3] == {"ok": True, "message": "mode set to accept-edits from the browser"}
        assert said[4] == {"ok": True, "message": "already in accept-edits mode"}
        assert said[5] == {"ok": False, "message": "no turn is running"}
        assert session.agent.policy.mode == "accept-edits"
        assert [level for text, level in told if "asked from the browser" in text] == ["warning", "warning"]
        lines = await session.stored(("mode_changed",))
        assert len(lines) == 1 and b'"by":"web"' in lines[0], "stored once, as the browser's"
    finally:
        await session.close()
