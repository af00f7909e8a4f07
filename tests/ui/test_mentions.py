"""``@path`` in the message box: Tab completes workspace paths; the file goes with the message."""

from __future__ import annotations

from pathlib import Path

from monkey.ui.widgets.command_hints import CommandHints
from monkey.ui.widgets.prompt_input import PromptInput
from tests.support.app import notice_text, settle

SIZE = (120, 36)


async def test_tab_completes_a_mention_and_the_file_goes_to_the_model(app_for, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("secret.txt\n")
    (workspace / "secret.txt").write_text("hidden\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    app = app_for([{"text": "It prints hi."}])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"what does @s")
        await pilot.pause()
        assert app.query_one(CommandHints).shown == ("@src/",)  # secret.txt is ignored by git
        await pilot.press("tab")
        assert prompt.text == "what does @src/"
        await pilot.press("m", "tab")
        assert prompt.text == "what does @src/main.py "
        await pilot.press(*"do?", "enter")
        await settle(pilot, app)
        user = app.agent.messages[0]
        assert user.content.startswith("what does @src/main.py do?")
        assert "<file path=\"src/main.py\">\nprint('hi')\n</file>" in user.content
        assert "attached src/main.py (1 line)" in notice_text(app)


async def test_a_protected_mention_is_refused_with_a_note(app_for) -> None:
    app = app_for([{"text": "ok"}])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"read @.git/config", "enter")
        await settle(pilot, app)
        assert app.agent.messages[0].content == "read @.git/config"
        assert "@.git/config not attached" in notice_text(app) and "protected" in notice_text(app)


async def test_a_pasted_image_path_becomes_its_mention_and_the_app_says_what_was_attached(
    app_for, workspace: Path, tmp_path: Path
) -> None:
    """A terminal pastes a file dropped on it as its path (quoted here, as some terminals do): the box gets
    ``@shot.png``; sent, the notices say its name, size and sides, and that this backend takes no images."""
    from textual import events

    from tests.support import images

    (workspace / "shot.png").write_bytes(images.png(640, 480))
    size = len(images.png(640, 480))
    app = app_for([{"text": "I cannot see it."}])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"what is")
        app.post_message(events.Paste(f"'{workspace / 'shot.png'}'"))  # as the terminal driver sends it
        await pilot.pause()
        assert prompt.text == "what is @shot.png "
        app.post_message(events.Paste("plain words"))
        await pilot.pause()
        assert prompt.text == "what is @shot.png plain words"
        await pilot.press("enter")
        await settle(pilot, app)
        said = notice_text(app)
        assert f"attached shot.png (PNG image, {size:,} bytes, 640×480)" in said
        assert "the image was not sent: the scripted backend takes only text" in said
        assert app.agent.messages[0].images == []
