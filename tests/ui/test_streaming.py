"""Streaming an answer into the transcript: a long open paragraph is shown as a plain tail
while it streams, and the finished message is exactly the markdown of its whole text."""

from __future__ import annotations

import random

from textual.geometry import Region
from textual.widgets._markdown import MarkdownBlock

from monkey.events import MessageCompleted, TextDelta
from monkey.ui.widgets.assistant_text import OPEN_BLOCK_LIMIT, AssistantText
from monkey.ui.widgets.open_tail import OpenTail, wrap_rows
from tests.support.app import until as wait_until

SIZE = (120, 36)
WORDS = ["the", "**bold**", "answer", "and", "`code`", "keeps", "going,", "word", "*it*"]


def paragraph(n: int, seed: int) -> str:
    """``n`` words of one paragraph, no line break."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def pieces(text: str, seed: int) -> list[str]:
    """``text`` cut into deltas of 1 to 9 characters (so markup is cut too)."""
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(text):
        step = rng.randint(1, 9)
        out.append(text[at : at + step])
        at += step
    return out


def rendered(widget: AssistantText) -> list[tuple[str, list[str]]]:
    """Each widget in a message and the rows it draws."""
    rows = []
    for child in widget.walk_children():
        strips = child.render_lines(Region(0, 0, child.size.width, child.size.height))
        rows.append((type(child).__name__, [strip.text for strip in strips]))
    return rows


def tail_rows(tail: OpenTail) -> list[str]:
    return [tail.render_line(y).text for y in range(tail.size.height)]


async def stream(pilot, app, deltas: list[str], every: int = 40) -> None:  # type: ignore[no-untyped-def]
    """Feed deltas as the agent would, letting the screen redraw now and then."""
    for i, delta in enumerate(deltas):
        await app.feed(TextDelta(text=delta))
        if i % every == 0:
            await pilot.pause()


async def test_a_long_streamed_paragraph_ends_as_the_markdown_of_the_whole_text(app_for) -> None:
    first = paragraph(900, seed=1)  # about 5,000 characters, no line break
    text = first + "\n\nA short one with **bold**.\n\n" + paragraph(700, seed=2) + "\n\n- a list\n- of two"
    assert len(first) > 2 * OPEN_BLOCK_LIMIT and "\n" not in first
    app = app_for([])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        app.transcript.load_history([(f"question {i}", f"answer {i}") for i in range(30)])
        await pilot.pause(0.1)
        deltas = pieces(text, seed=3)
        cut = len(pieces(first, seed=3)) - 5  # inside the first paragraph
        await stream(pilot, app, deltas[:cut])
        block = app.transcript.streams["text"]
        await wait_until(pilot, lambda: bool(block.query(OpenTail)), "the open tail")
        [tail] = block.query(OpenTail)
        await wait_until(pilot, lambda: block._target + tail.raw_length == len(block.text), "the tail catching up")
        shown = "".join(tail_rows(tail)).replace(" ", "")
        assert "**bold**" in tail._text and shown and shown in first.replace(" ", "")
        await pilot.pause(0.2)
        assert app.transcript.is_vertical_scroll_end  # the transcript follows the growing tail
        await stream(pilot, app, deltas[cut:])
        await app.feed(MessageCompleted(text=text))
        await wait_until(pilot, lambda: not block.query(OpenTail) and block.source == text, "the whole message")
        await pilot.pause(0.2)
        app.transcript.load_history([("", text)])  # the same text drawn at once, as a finished message
        await pilot.pause(0.3)
        reference = app.transcript.query(AssistantText).last()
        assert reference is not block and reference.source == text
        assert block.text == text
        assert block.size.height == reference.size.height
        drawn = rendered(block)
        assert drawn == rendered(reference)
        rows = " ".join(" ".join(lines) for _, lines in drawn)
        assert "A short one with bold." in rows and "**" not in rows and "of two" in rows
        assert all(isinstance(child, MarkdownBlock) for child in block.children)


def shown_text(app) -> str | None:  # type: ignore[no-untyped-def]
    """The text the streaming message holds (``None`` before the message exists)."""
    block = app.transcript.streams.get("text")
    return None if block is None else block.text


async def redrawn(pilot, block: AssistantText) -> OpenTail | None:  # type: ignore[no-untyped-def]
    """Redraw ``block`` now, as its refresh timer would, and wait until the screen shows it.

    Driving the redraw from the test (instead of waiting for the 100 ms timer) makes what the
    test sees the same on a fast or a slow machine.
    """
    block.redraw()
    await wait_until(pilot, lambda: not block._appending, "the markdown taking its text")
    tails = block.query(OpenTail)
    if not tails:
        return None
    tail = tails.first()
    await wait_until(pilot, lambda: tail.size.height > 0, "the tail being laid out")
    return tail


async def test_the_open_tail_never_shows_raw_escape_sequences(app_for) -> None:
    evil = " [bold red]not markup[/] \x1b]52;c;aGk=\x07 \x1b[2J\ttab \u202eevil "
    text = (paragraph(450, seed=4) + evil) * 3
    app = app_for([])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        seen: list[str] = []
        tails_seen = 0
        sent = ""
        for i, delta in enumerate(pieces(text, seed=5)):
            await app.feed(TextDelta(text=delta))
            sent += delta
            if i % 10 == 0:
                await wait_until(pilot, lambda sent=sent: shown_text(app) == sent, "the deltas reaching the message")
                tail = await redrawn(pilot, app.transcript.streams["text"])
                if tail is not None:
                    tails_seen += 1
                    seen.extend(tail_rows(tail))
        await wait_until(pilot, lambda: shown_text(app) == text, "every delta reaching the message")
        block = app.transcript.streams["text"]
        tail = await redrawn(pilot, block)
        assert tail is not None and block._target + tail.raw_length == len(text)
        assert tails_seen > 10  # the paragraph passed OPEN_BLOCK_LIMIT early: most redraws showed a tail
        rows = tail_rows(tail)
        seen.extend(rows)
        joined = "".join(rows)
        assert "[bold red]not markup[/]" in joined and "\\x1b[2J" in joined and "\\u202e" in joined
        for row in seen:
            assert not any(ch in row for ch in "\x1b\x07\t\u202e"), row
        app.transcript.end_stream()
        await wait_until(pilot, lambda: not block.query(OpenTail), "the tail going")
        assert "\x1b" not in block.source and block.text == text


def test_wrapping_again_from_the_last_row_gives_the_rows_of_wrapping_everything() -> None:
    rng = random.Random(6)
    words = ["a", "bb", "ccc", "wordy", "x" * 30, "中文字", "  ", "\n"]
    for _ in range(500):
        text = "".join(rng.choice(words) + rng.choice([" ", "", "  "]) for _ in range(rng.randint(1, 60)))
        width = rng.randint(1, 25)
        rows, at = [0], 0
        while at < len(text):
            at = min(len(text), at + rng.randint(1, 7))
            rows[-1:] = wrap_rows(text[:at], width, rows[-1])
        assert rows == wrap_rows(text, width), (text, width)


async def test_a_person_who_scrolled_up_is_not_pulled_down_by_the_stream(app_for) -> None:
    app = app_for([])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.transcript.load_history([(f"question {i}", f"answer {i}") for i in range(30)])
        transcript = app.transcript
        deltas = pieces(paragraph(600, seed=7), seed=8)
        await stream(pilot, app, deltas[:100])
        await wait_until(
            pilot,
            lambda: transcript.max_scroll_y > 0 and transcript.is_vertical_scroll_end,
            "following the stream at the bottom",
        )
        transcript.focus()  # away from the message box, so the keys scroll the transcript (Shift+Tab is the mode)
        await pilot.press("home")
        await wait_until(pilot, lambda: transcript.scroll_y == 0, "scrolled to the top")
        before = transcript.max_scroll_y
        await stream(pilot, app, deltas[100:])
        await wait_until(pilot, lambda: transcript.max_scroll_y > before, "the rest of the stream laid out")
        await pilot.pause()
        assert transcript.scroll_y == 0 and transcript.max_scroll_y > 0
        await pilot.press("end")
        await wait_until(pilot, lambda: transcript.is_vertical_scroll_end, "back at the bottom")
        await app.feed(TextDelta(text=" " + paragraph(300, seed=9)))
        grown = transcript.max_scroll_y
        await wait_until(
            pilot,
            lambda: transcript.max_scroll_y > grown and transcript.is_vertical_scroll_end,
            "following again: at the bottom of the longer text",
        )
