"""The app's approval dialog answers an ACP agent's ``session/request_permission`` (Textual Pilot; the fake
ACP agent as ``--backend acp:fake``): the dialog shows the write the agent asks for, ``y`` lets it write
through monkey (answered "allow once"), ``n`` + a reason refuses it (answered "reject once", no file)."""

from __future__ import annotations

import json
from pathlib import Path

from monkey.cli import build_parser
from monkey.commands.flags import session_request
from monkey.session.setup import resolve_setup
from monkey.ui.app import MonkeyApp
from monkey.ui.approver import TuiApprover
from monkey.ui.screens.approval import ApprovalScreen
from tests.support.acp_agents import fake_acp_exe, got
from tests.support.app import settle, type_and_send, wait_for_screen


def _app(workspace: Path) -> MonkeyApp:
    args = build_parser().parse_args(["agent", "--backend", "acp:fake", "--cwd", str(workspace)])
    setup = resolve_setup(session_request(args), TuiApprover())
    return MonkeyApp(setup, notices=setup.notices, clock=lambda: 0.0, approval_guard=0.0)


async def _turn(app: MonkeyApp, keys: tuple[str, ...], prompt: str) -> tuple[ApprovalScreen, list[str]]:
    async with app.run_test(size=(120, 40)) as pilot:
        await type_and_send(pilot, app, prompt)
        await wait_for_screen(pilot, app, ApprovalScreen)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await pilot.press(*keys)
        await settle(pilot, app)
        client = app.agent.backend.client  # type: ignore[attr-defined]
        answers = list(client.answers) if client is not None else []
    return screen, answers


async def test_the_dialog_answers_the_agents_permission_request(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    exe = fake_acp_exe(tmp_path / "bin")
    (monkey_home / "config.toml").write_text(
        f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n[acp_agents.fake.env]\nFAKE_LOG = {json.dumps(str(log))}\n"
    )
    screen, answers = await _turn(_app(workspace), ("y",), "write hello.txt")
    assert screen.request.tool == "file_write" and screen.request.arguments["path"] == "hello.txt"
    assert answers == ["allow_once"]
    assert (workspace / "hello.txt").read_text() == "hello\n"  # written through monkey once the person said yes
    (workspace / "hello.txt").unlink()
    screen, answers = await _turn(_app(workspace), ("n", *"not now", "enter"), "write hello.txt")
    assert answers == ["reject_once"]
    assert not (workspace / "hello.txt").exists()
    outcomes = [
        m["result"]["outcome"] for m in got(log) if isinstance(m.get("result"), dict) and "outcome" in m["result"]
    ]
    assert [o.get("optionId") for o in outcomes] == ["yes", "no"]  # never the agent's "always" options
