"""Permission modes in the app: Shift+Tab cycles them, /mode names one, the status bar says it."""

from __future__ import annotations

from pathlib import Path

from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import SIZE, settle, type_and_send

WRITE = [
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "plan.txt", "content": "x\n"}}]},
    {"text": "I could not write it."},
]


def status(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.status.status_text())


async def test_shift_tab_cycles_the_modes_and_skips_auto(app_for) -> None:
    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert status(app).startswith("⏵ default · ")
        seen = []
        for _ in range(4):
            await pilot.press("shift+tab")
            await pilot.pause()
            seen.append(app.agent.policy.mode)
        assert seen == ["accept-edits", "plan", "default", "accept-edits"]
        assert status(app).startswith("⏵ accept edits · ")
        # the prompt keeps the focus: Shift+Tab is not "focus the previous widget" here
        assert app.focused is not None and app.focused.id == "prompt"


async def test_a_session_started_in_auto_cycles_through_auto(app_for) -> None:
    app = app_for([{"text": "hello"}], "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        seen = []
        for _ in range(4):
            await pilot.press("shift+tab")
            await pilot.pause()
            seen.append(app.agent.policy.mode)
        assert seen == ["default", "accept-edits", "plan", "auto"]


async def test_plan_mode_refuses_a_write_and_says_why(app_for, workspace: Path) -> None:
    app = app_for(WRITE)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/mode plan")
        await settle(pilot, app)
        assert status(app).startswith("⏵ plan (read-only) · ")
        await type_and_send(pilot, app, "write plan.txt")
        await settle(pilot, app)
        assert not (workspace / "plan.txt").exists()
        [block] = app.transcript.query(ToolBlock)
        assert block.state != "ok" and "plan mode is read-only" in block.shown


async def test_accept_edits_writes_without_asking(app_for, workspace: Path) -> None:
    app = app_for(WRITE, "--mode", "accept-edits")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "write plan.txt")
        await settle(pilot, app)
        assert (workspace / "plan.txt").read_text() == "x\n"
        assert status(app).startswith("⏵ accept edits · ")


async def test_approve_for_good_in_the_dialog_then_revoke_it(app_for, workspace: Path, monkey_home: Path) -> None:
    from monkey.ui.screens.approval import ApprovalScreen
    from tests.support.app import wait_for_screen

    app = app_for(WRITE + [{"text": "again"}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "write plan.txt")
        await wait_for_screen(pilot, app, ApprovalScreen)
        rule = f"file_write({workspace.resolve()}/**)"  # this workspace only, the written file's folder
        shown = "".join(str(app.screen.query_one("#grant").render()).split())
        assert "".join(f"f approves for good, saving to your config: {rule}".split()) in shown
        await pilot.press("f")
        await settle(pilot, app)
        assert (workspace / "plan.txt").exists()
        assert f'"{rule}"' in (monkey_home / "config.toml").read_text()
        await type_and_send(pilot, app, "/approvals")
        await settle(pilot, app)
        listing = "".join(str(app.transcript.children[-1].render()).split())
        assert "everyfile_writecall" not in listing, "for good is the folder's rule, for the session too"
        assert f"1.{rule}" in listing and "forgood,in" in listing
        await type_and_send(pilot, app, "/approvals revoke 1")
        await settle(pilot, app)
        assert "".join(f"removed {rule} from".split()) in "".join(str(app.transcript.children[-1].render()).split())
        assert "file_write" not in (monkey_home / "config.toml").read_text()
        assert all(str(rule) != "file_write" for rule in app.agent.policy.allow)


async def test_the_dialog_does_not_say_an_approved_command_leaves_the_sandbox(app_for) -> None:
    from monkey.ui.screens.approval import ApprovalScreen
    from tests.support.app import SHELL_TWICE, wait_for_screen

    app = app_for(SHELL_TWICE)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "run it")
        await wait_for_screen(pilot, app, ApprovalScreen)
        said = str(app.screen.query_one("#grant").render())
        assert "outside the sandbox" not in said.lower()  # approved, it still runs in the sandbox
        await pilot.press("escape")
        await settle(pilot, app)


async def test_a_blocked_approved_command_is_put_to_the_person_again_to_run_outside(app_for, tmp_path: Path) -> None:
    import pytest

    from monkey.tools.sandbox import bubblewrap_problem
    from monkey.ui.screens.approval import ApprovalScreen
    from tests.support.app import wait_for_screen

    if bubblewrap_problem():  # the app probes auto: bubblewrap here (the sandbox tests need it)
        pytest.skip(bubblewrap_problem())
    target = tmp_path / "outside.txt"
    app = app_for(
        [
            {
                "text": "",
                "tool_calls": [
                    {
                        "name": "shell_execute",
                        "arguments": {"command": f"python3 -c \"open('{target}', 'w').write('x')\""},
                    }
                ],
            },
            {"text": "Tried."},
        ]
    )
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "write it")
        await wait_for_screen(pilot, app, ApprovalScreen)
        first = app.screen
        await pilot.press("y")
        for _ in range(200):
            if isinstance(app.screen, ApprovalScreen) and app.screen is not first:
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, ApprovalScreen) and app.screen is not first
        assert not target.exists()  # the approved run stayed in the sandbox
        said = str(app.screen.query_one("#grant").render())
        assert "runs again OUTSIDE the sandbox" in said and "no session grant possible" in said
        await pilot.press("escape")
        await settle(pilot, app)
    assert not target.exists()
