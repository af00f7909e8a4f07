"""The transcript follows the conversation to its end unless the person scrolled up; then a
"more below" line says so, and Ctrl+End (or a click on it) goes back down."""

from __future__ import annotations

from monkey.ui.screens.approval import ApprovalScreen
from tests.support.app import settle, type_and_send, until, wait_for_screen

SIZE = (120, 36)
LONG = "\n\n".join(f"Paragraph {i} of the final answer, long enough to take a line." for i in range(40))
TURNS = [
    {
        "text": "Let me look at the files first.",
        "tool_calls": [
            {"name": "shell_execute", "arguments": {"command": "python3 -c 'import os; print(os.listdir())'"}}
        ],
    },
    {"text": "And the readme.", "tool_calls": [{"name": "file_read", "arguments": {"path": "README.md"}}]},
    {"text": LONG + "\n\nTHE END."},
]


def at_bottom(transcript) -> bool:  # type: ignore[no-untyped-def]
    return transcript.max_scroll_y > 0 and transcript.scroll_y >= transcript.max_scroll_y


async def test_the_final_answer_after_an_approval_is_in_view(app_for) -> None:
    app = app_for(TURNS)
    async with app.run_test(size=SIZE) as pilot:
        app.transcript.load_history([(f"question {i}", f"answer {i}") for i in range(20)])  # an earlier session
        await type_and_send(pilot, app, "look around and explain")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("y")
        await settle(pilot, app)
        assert at_bottom(app.transcript)
        assert not app.more_below.has_class("-shown")
        await type_and_send(pilot, app, "/model")
        await settle(pilot, app)
        assert at_bottom(app.transcript)


async def test_scrolled_up_it_stays_and_says_more_below_until_ctrl_end(app_for) -> None:
    app = app_for([{"text": LONG}, {"text": LONG}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "explain")
        await settle(pilot, app)
        transcript = app.transcript
        await until(
            pilot,
            lambda: at_bottom(transcript) and not app.more_below.has_class("-shown"),
            "the answer in view, no 'more below'",
        )
        await pilot.press("tab")  # from the message box to the transcript
        assert app.focused is transcript
        await pilot.press("pageup")
        await until(pilot, lambda: app.more_below.has_class("-shown"), "'more below' once scrolled up")
        y = transcript.scroll_y
        assert y < transcript.max_scroll_y
        app.query_one("#prompt").insert("and again")  # typed and sent without moving the focus from the transcript
        app.submit("and again")
        await settle(pilot, app)
        assert transcript.scroll_y == y and app.more_below.has_class("-shown")  # not pulled down while reading
        await pilot.press("ctrl+end")
        await until(
            pilot,
            lambda: at_bottom(transcript) and not app.more_below.has_class("-shown"),
            "back at the bottom after Ctrl+End",
        )


LONG_FILE = "".join(f"line {i} of a new module, long enough to wrap nowhere\n" for i in range(60))


async def test_a_long_diff_that_opens_does_not_stop_the_following(app_for) -> None:
    """A finished edit opens its block on a diff taller than the view; opening it must not scroll
    the view up to the block's top (Collapsible's scroll_visible released the anchor, so the
    final answer that came next was left below "more below")."""
    turns = [
        {
            "text": "Writing the module.",
            "tool_calls": [{"name": "file_write", "arguments": {"path": "mod.py", "content": LONG_FILE}}],
        },
        {"text": LONG + "\n\nTHE END."},
    ]
    app = app_for(turns, "--no-approval")
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, app, "write the module")
        await settle(pilot, app)
        transcript = app.transcript
        await pilot.pause(0.3)
        assert at_bottom(transcript)
        assert not app.more_below.has_class("-shown")


async def test_opening_a_block_by_the_program_keeps_the_view_at_the_end(app_for) -> None:
    """The same, step by step: a diff opens its block and the answer arrives before the next refresh."""
    from monkey.events import TextDelta, ToolCallEvent, ToolResult

    app = app_for([{"text": "x"}])
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = app.transcript
        transcript.load_history([(f"question {i}", f"answer {i}") for i in range(20)])
        await app.feed(ToolCallEvent(call_id="c1", name="file_write", arguments={"path": "mod.py"}))
        await until(pilot, lambda: at_bottom(transcript), "following the end")
        diff = "".join(f"+line {i}\n" for i in range(60))
        await app.feed(ToolResult(call_id="c1", name="file_write", ok=True, output="wrote", diff=diff))
        await app.feed(TextDelta(text=LONG + "\n\nTHE END."))
        for _ in range(10):
            await pilot.pause(0.05)
        assert transcript.is_anchored and at_bottom(transcript)
        assert not app.more_below.has_class("-shown")
