"""Drive the real app with Pilot on the scripted backend: sending, approvals, cancelling,
commands, the event pane and queued messages."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import RichLog

from monkey.ui.screens.approval import ApprovalScreen
from monkey.ui.widgets.assistant_text import AssistantText
from monkey.ui.widgets.command_hints import CommandHints
from monkey.ui.widgets.event_pane import EventPane
from monkey.ui.widgets.prompt_input import PromptInput
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import SHELL_TWICE, SIZE, settle, type_and_send, until, wait_for_screen


def texts(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [w.text for w in app.transcript.query(AssistantText)]


EDIT = [
    {
        "text": "I'll fix **it**.",
        "tool_calls": [
            {"name": "file_edit", "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"}}
        ],
    },
    {"text": "Done."},
]


async def test_send_shows_streamed_text_and_a_tool_block(app_for, workspace: Path) -> None:
    app = app_for(EDIT, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename the project")
        await settle(pilot, app)
        assert texts(app) == ["I'll fix **it**.", "Done."]
        [block] = app.transcript.query(ToolBlock)
        assert block.tool == "file_edit" and block.state == "ok" and not block.collapsed
        assert "# project" in (workspace / "README.md").read_text()
        assert app.status.checkpoints == 1 and app.status.tokens_in > 0


async def test_approve_once_with_the_real_dialog(app_for, workspace: Path) -> None:
    app = app_for(EDIT)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename")
        await wait_for_screen(pilot, app, ApprovalScreen)
        assert app.screen.request.tool == "file_edit"
        await pilot.press("y")
        await settle(pilot, app)
        assert (workspace / "README.md").read_text() == "# project\n"
        assert app.agent.policy.grants == {}
        assert app.transcript.query_one(ToolBlock).state == "ok"


async def test_approve_for_session_then_revoke(app_for) -> None:
    app = app_for(SHELL_TWICE)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "run echo twice")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("a")
        await settle(pilot, app)  # the second echo needed no dialog
        blocks = list(app.transcript.query(ToolBlock))
        assert [b.state for b in blocks] == ["ok", "ok"]
        assert "one" in blocks[0].output and "two" in blocks[1].output
        assert len(app.agent.policy.grants) == 1
        await type_and_send(pilot, app, "/approvals")
        await pilot.pause(0.1)
        assert "1. " in str(app.transcript.children[-1].render())
        await type_and_send(pilot, app, "/approvals revoke 1")
        await pilot.pause(0.1)
        assert app.agent.policy.grants == {}
        assert "revoked" in str(app.transcript.children[-1].render())


async def test_deny_with_a_reason(app_for, workspace: Path) -> None:
    app = app_for([EDIT[0], {"text": "Understood."}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("n")
        await pilot.pause(0.05)
        for ch in "keep it":
            await pilot.press("space" if ch == " " else ch)
        await pilot.press("enter")
        await settle(pilot, app)
        assert (workspace / "README.md").read_text() == "# proj\n"
        assert app.transcript.query_one(ToolBlock).state == "denied"
        assert any("keep it" in m.content for m in app.agent.messages if m.role == "tool")
        assert texts(app)[-1] == "Understood."


async def test_escape_cancels_the_turn_and_the_app_stays(app_for) -> None:
    app = app_for([{"text": "word " * 200, "delay": 0.05}, {"text": "Again."}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "talk slowly")
        await pilot.pause(0.3)
        assert app.working
        await pilot.press("escape")
        await settle(pilot, app)
        assert app.last_reason == "cancelled"
        assert app.is_running
        await type_and_send(pilot, app, "again")
        await settle(pilot, app)
        assert texts(app)[-1] == "Again." and app.last_reason == "completed"


async def test_slash_command_completion(app_for) -> None:
    app = app_for([{"text": "x"}])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        for key in "/che":
            await pilot.press(key if key != "/" else "slash")
        await pilot.pause(0.05)
        hints = app.query_one(CommandHints)
        assert hints.has_class("-shown") and "/checkpoints" in str(hints.render())
        await pilot.press("tab")
        assert prompt.text == "/checkpoints "
        prompt.clear()
        await pilot.press("slash", "c")
        await pilot.press("tab")  # /checkpoints, /clear, /compact: the common prefix only
        assert prompt.text == "/c"
        await pilot.pause(0.05)
        assert "/compact" in str(hints.render())


async def test_event_pane_toggle_filter_and_detail(app_for) -> None:
    app = app_for([{"text": "Hello there, friend."}])
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EventPane)
        assert not pane.has_class("-open")
        await pilot.press("ctrl+e")
        assert pane.has_class("-open")
        await type_and_send(pilot, app, "hi")
        await settle(pilot, app)
        log = pane.query_one(RichLog)
        assert len(log.lines) == pane.count > 5
        pane.query_one("#event-filter").focus()
        for key in "usage":
            await pilot.press(key)
        await pilot.pause(0.1)
        assert len(log.lines) == 1 and "usage" in log.lines[0].text
        n = next(seq for seq, e in pane.events if e.type == "usage")
        pane.query_one("#event-filter").value = ""
        await pilot.pause(0.05)
        assert pane.show_detail(n)
        assert '"input_tokens"' in pane.detail
        await type_and_send(pilot, app, "/events")
        await pilot.pause(0.05)
        assert not pane.has_class("-open")


async def test_message_typed_while_working_is_queued(app_for) -> None:
    app = app_for([{"text": "first answer " * 30, "delay": 0.1}, {"text": "second answer"}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "one")
        for _ in range(200):  # until the first answer streams (a condition, not a guess of how long it takes)
            if app.working and texts(app) and texts(app)[-1].startswith("first"):
                break
            await pilot.pause(0.02)
        await type_and_send(pilot, app, "two")
        assert list(app.queue) == ["two"] and app.status.queued == 1
        await settle(pilot, app)
        assert [m.content for m in app.agent.messages if m.role == "user"] == ["one", "two"]
        assert texts(app)[-1] == "second answer" and app.status.queued == 0


async def test_undo_command_reverts_the_change(app_for, workspace: Path) -> None:
    app = app_for(EDIT, "--no-approval")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename")
        await settle(pilot, app)
        assert (workspace / "README.md").read_text() == "# project\n"
        await type_and_send(pilot, app, "/undo")
        for _ in range(100):
            if (workspace / "README.md").read_text() == "# proj\n":
                break
            await pilot.pause(0.05)
        assert (workspace / "README.md").read_text() == "# proj\n"
        await type_and_send(pilot, app, "/undo")
        await pilot.pause(0.5)
        assert "nothing to undo" in str(app.transcript.children[-1].render())


async def test_untrusted_text_is_inert(app_for) -> None:
    evil = "[bold red]not markup[/] \x1b]52;c;aGk=\x07 \x1b[2J done"
    app = app_for(
        [
            {
                "text": evil,
                "tool_calls": [{"name": "shell_execute", "arguments": {"command": "printf '[red]x\\033[2J'"}}],
            },
            {"text": "ok"},
        ],
        "--no-approval",
    )
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "[b]me[/b]")
        await settle(pilot, app)
        shown = app.transcript.query(AssistantText).first()
        assert "\x1b" not in shown.source and "\\x1b" in shown.source
        block = app.transcript.query_one(ToolBlock)
        rendered = block.shown
        assert "[red]x" in rendered and "\x1b" not in rendered
        assert "[b]me[/b]" in str(app.transcript.children[0].render())


async def test_ctrl_d_on_empty_input_quits_and_history_persists(app_for) -> None:
    app = app_for([{"text": "a"}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "remember\nme")
        await settle(pilot, app)
        await pilot.press("ctrl+d")
        await pilot.pause(0.3)
        assert not app.is_running
    again = app_for([{"text": "b"}])
    async with again.run_test(size=SIZE) as pilot:
        prompt = again.query_one(PromptInput)
        await pilot.press("up")
        assert prompt.text == "remember\nme"


async def test_ctrl_c_twice_quits(app_for) -> None:
    app = app_for([{"text": "a"}])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause(0.3)
        assert not app.is_running


async def test_escape_keeps_the_queue_for_the_person_to_send_or_clear(app_for) -> None:
    slow = {"text": "word " * 6000, "delay": 0.05}  # streams far longer than any test waits: only escape ends it
    app = app_for([slow, {"text": "Second."}, {"text": "Third."}, slow])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "talk slowly")
        await until(pilot, lambda: app.working and bool(texts(app)), "the answer streaming")
        await type_and_send(pilot, app, "two")
        await type_and_send(pilot, app, "three")
        assert list(app.queue) == ["two", "three"]
        await pilot.press("escape")
        await until(pilot, lambda: not app.working, "the turn cancelled")
        await pilot.pause(0.3)
        assert app.last_reason == "cancelled"
        assert list(app.queue) == ["two", "three"], "a cancelled turn does not send what was queued"
        assert [m.content for m in app.agent.messages if m.role == "user"] == ["talk slowly"]
        notices = [str(w.render()) for w in app.transcript.query(".notice")]
        assert any("2 queued message(s) kept" in n for n in notices)
        await pilot.press("enter")  # an empty message box: send what waits
        await settle(pilot, app)
        assert [m.content for m in app.agent.messages if m.role == "user"] == ["talk slowly", "two", "three"]
        assert texts(app)[-1] == "Third."
        await type_and_send(pilot, app, "four")
        await until(pilot, lambda: app.working and texts(app)[-1].startswith("word"), "the answer streaming")
        await type_and_send(pilot, app, "five")
        await pilot.press("escape")
        await until(pilot, lambda: not app.working, "the turn cancelled")
        await pilot.pause(0.3)
        assert list(app.queue) == ["five"]
        await pilot.press("escape")  # no turn to cancel: the queue is cleared
        await pilot.pause(0.1)
        assert list(app.queue) == [] and app.status.queued == 0
        assert [m.content for m in app.agent.messages if m.role == "user"][-1] == "four"
