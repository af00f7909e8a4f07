"""Copying out of the app: Ctrl-C copies a selection (else it cancels, as before); /copy the last answer."""

from __future__ import annotations

from monkey.ui.widgets.prompt_input import PromptInput
from monkey.ui.widgets.transcript import Transcript
from tests.support.app import SIZE, notice_text, settle, type_and_send

ANSWER = "Use `git log --oneline`.\nIt prints one line per commit."


async def test_slash_copy_puts_the_last_answer_on_the_clipboard(app_for) -> None:
    app = app_for([{"text": ANSWER}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/copy")
        await pilot.pause(0.1)
        assert app.clipboard == "" and "nothing to copy yet" in notice_text(app)
        await type_and_send(pilot, app, "how do I list commits?")
        await settle(pilot, app)
        await type_and_send(pilot, app, "/copy")
        await pilot.pause(0.1)
        assert app.clipboard == ANSWER
        assert "copied the last answer to the clipboard (55 characters, 2 lines)" in notice_text(app)


async def test_ctrl_c_copies_the_selected_text_and_does_not_cancel(app_for) -> None:
    app = app_for([{"text": ANSWER}])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("draft of a message")
        prompt.select_all()
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")  # twice: still copying, never quitting
        await pilot.pause(0.1)
        assert app.clipboard == "draft of a message"
        assert app.is_running and prompt.text == "draft of a message"


async def test_ctrl_c_copies_text_selected_with_the_mouse(app_for) -> None:
    app = app_for([{"text": ANSWER}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "how do I list commits?")
        await settle(pilot, app)
        transcript = app.query_one(Transcript)
        answer = next(w for w in transcript.walk_children() if "one line per commit" in str(getattr(w, "source", "")))
        region = answer.region
        await pilot.mouse_down(answer, offset=(0, 0))
        await pilot.hover(answer, offset=(region.width - 1, region.height - 1))
        await pilot.mouse_up(answer, offset=(region.width - 1, region.height - 1))
        await pilot.pause(0.1)
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert "one line per commit" in app.clipboard
        assert app.is_running
