"""The conversation: user turns, streamed answers, collapsed thinking, tool blocks, notices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from monkey.safe_text import escape_controls

if TYPE_CHECKING:  # imported when first used: markdown and syntax are not needed for the first frame
    from monkey.store.history import HistoryItem
    from monkey.ui.widgets.assistant_text import AssistantText
    from monkey.ui.widgets.tool_block import ToolBlock

MAX_BLOCKS = 100
"""Widgets kept mounted (about the last 50 turns); older ones are removed. Every layout of
the screen visits each mounted widget, and a streaming answer asks for one per redraw, so
this bounds how long a key press can wait, as well as memory (the session store keeps all)."""

_LEVEL_STYLE = {"info": "dim", "warning": "yellow", "error": "bold red"}


class Transcript(VerticalScroll):
    """The scrolling conversation. The app calls its methods; it tells the app whether there is more below.

    Following: once the conversation is taller than the view, the transcript is anchored to
    its end, so everything that arrives (answers, tool blocks that open, notices) stays in
    view whatever order the screen updates come in. Textual lets go of the anchor when the
    person scrolls up, and takes it again when they come back to the bottom (or press
    Ctrl+End). While they read above, :class:`MoreBelow` messages say so.
    """

    class MoreBelow(Message):
        """Whether the view shows the end of the conversation (``below`` False) or not."""

        def __init__(self, below: bool) -> None:
            super().__init__()
            self.below = below
            """Whether there is conversation below what is shown."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1; }
    Transcript .user { margin: 1 0 0 0; color: $accent; text-style: bold; }
    Transcript .notice { margin: 0 0 0 2; }
    Transcript Collapsible.thinking { border: none; padding: 0; margin: 0 0 0 2; background: transparent; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.streams: dict[str, AssistantText] = {}
        """The open streamed blocks by kind (``text``, ``thinking``)."""
        self.tools: dict[str, ToolBlock] = {}
        """Tool blocks by call id (only the last :data:`MAX_BLOCKS` widgets stay)."""
        self.dropped = 0
        """How many old widgets were removed."""
        self.hidden_turns = 0
        """Restored turns that were never mounted."""
        self.export_hint = ""
        """How to see everything (set by the app once the session is open)."""
        self._earlier: Static | None = None
        self.below = False
        """Whether part of the conversation is below the view (the person scrolled up)."""

    def on_mount(self) -> None:
        self.watch(self, "virtual_size", self._follow, init=False)
        self.watch(self, "scroll_y", self._follow, init=False)

    def on_resize(self) -> None:
        self._follow()

    def _follow(self, *_: object) -> None:
        """After the content or the scroll position changed: anchor once it overflows; say what is below."""
        # anchoring a transcript shorter than the view would push it to the bottom of the screen
        overflows = self.container_size.height > 0 and self.max_scroll_y > 0
        if overflows and not self.is_anchored:
            self.anchor()
        elif not overflows and self.is_anchored and self.container_size.height > 0:
            self.anchor(False)
            self.scroll_to(y=0, animate=False, immediate=True)
        below = self.max_scroll_y - self.scroll_y >= 1 and not self._following()
        if below != self.below:
            self.below = below
            self.post_message(self.MoreBelow(below))

    def _following(self) -> bool:
        """Whether Textual keeps the view at the end: anchored, and the person has not scrolled away.

        Then nothing is below, even for the frame in which the content or the view changed size
        and the scroll position has not caught up: Textual's layout moves an anchored view to the
        end without telling the ``scroll_y`` watchers, so the position alone would leave "more
        below" shown under a view that is at the end. Textual keeps whether the person let go of
        the anchor in ``_anchor_released`` (no public name); without it, the position decides.
        """
        return self.is_anchored and not getattr(self, "_anchor_released", True)

    def jump_to_end(self) -> None:
        """Show the end of the conversation and follow it again."""
        self.scroll_end(animate=False, immediate=True)

    def _add(self, widget: Widget) -> None:
        follow = self.is_vertical_scroll_end or self.max_scroll_y == 0
        self.mount(widget)
        first = 0 if self._earlier is None else 1  # the "earlier … not shown" line stays on top
        excess = len(self.children) - first - MAX_BLOCKS
        if excess > 0:
            from monkey.ui.widgets.tool_block import ToolBlock

            old = list(self.children[first : first + excess])
            self.dropped += len(old)
            for w in old:
                if isinstance(w, ToolBlock):
                    self.tools.pop(w.call_id, None)
            self.remove_children(old)
            self._show_earlier()
        if follow:
            self.scroll_end(animate=False, immediate=False)

    def add_user(self, text: str) -> None:
        """Show what the person sent."""
        self.end_stream()
        self._add(Static(Text("› " + escape_controls(text)), classes="user"))

    def add_notice(self, text: str, level: str = "info") -> None:
        """Show a one-line notice (help, errors, undo results)."""
        self.end_stream()
        self._add(Static(Text(escape_controls(text), style=_LEVEL_STYLE.get(level, "")), classes=f"notice {level}"))

    def add_delta(self, kind: str, text: str) -> None:
        """Append streamed text to the open block of its kind, opening one if needed."""
        block = self.streams.get(kind)
        if block is None:
            from monkey.ui.widgets.assistant_text import AssistantText

            if kind == "text":
                self.end_stream("thinking")
            block = AssistantText(kind)
            self.streams[kind] = block
            if kind == "thinking":
                self._add(Collapsible(block, title="thinking", collapsed=True, classes="thinking"))
            else:
                self._add(block)
        block.add_delta(text)

    def end_stream(self, kind: str | None = None) -> None:
        """Complete the open streamed block(s)."""
        for k in [kind] if kind else list(self.streams):
            block = self.streams.pop(k, None)
            if block is not None:
                block.complete()

    def shows(self, text: str) -> bool:
        """Whether a tool block of the conversation already says ``text`` (a denial's reason)."""
        return bool(text) and any(text in block.shown for block in self.tools.values())

    def end_tools(self, state: str) -> None:
        """Give every tool block that never got a result the state word ``state`` (the turn ended)."""
        for block in self.tools.values():
            if not block.finished:
                block.progress(state=state)
                block.finished = True

    def add_tool(self, call_id: str, name: str, arguments: dict) -> ToolBlock:
        """Open a block for a tool call."""
        from monkey.ui.widgets.tool_block import ToolBlock

        self.end_stream()
        block = ToolBlock(call_id, name, arguments)
        self.tools[call_id] = block
        self._add(block)
        return block

    def add_subagent(self, block: Widget, call_id: str) -> None:
        """Show a sub-agent's block right under its ``task`` call's block."""
        anchor = self.tools.get(call_id)
        if anchor is None or anchor.parent is not self:
            self._add(block)
            return
        follow = self.is_vertical_scroll_end or self.max_scroll_y == 0
        self.mount(block, after=anchor)
        if follow:
            self.scroll_end(animate=False, immediate=False)

    def load_history(self, turns: list[tuple[str, str]]) -> None:
        """Show earlier (user, assistant) turns at once; only the last ones are mounted."""
        from monkey.store.history import Said

        self.load_items(
            [
                Said(role, text)
                for turn in turns
                for role, text in zip(("user", "assistant"), turn, strict=False)
                if text
            ]
        )

    def load_items(self, items: list[HistoryItem]) -> None:
        """Show a resumed session's messages, answers and tool calls at once; only the last ones are mounted."""
        from monkey.store.history import Said
        from monkey.ui.widgets.assistant_text import AssistantText
        from monkey.ui.widgets.tool_block import ToolBlock

        self.end_stream()
        keep = max(1, 2 * (MAX_BLOCKS // 2 - 1))
        hidden = items[:-keep]
        self.hidden_turns += sum(1 for item in hidden if isinstance(item, Said) and item.role == "user")
        widgets: list[Widget] = []
        for item in items[-keep:]:
            if isinstance(item, Said) and item.role == "user":
                widgets.append(Static(Text("› " + escape_controls(item.text)), classes="user"))
            elif isinstance(item, Said):
                block = AssistantText("text")
                block.add_delta(item.text)
                block.complete()
                widgets.append(block)
            else:
                call, result = item.call, item.result
                tool = ToolBlock(call.call_id, call.name, call.arguments)
                if result is None:
                    tool.progress(state="not finished")
                    tool.finished = True
                else:
                    tool.finish(result.ok, result.output, result.duration_ms, result.diff, result.wait_ms)
                tool.collapsed = True  # earlier work: one line each until opened
                self.tools[call.call_id] = tool
                widgets.append(tool)
        self.mount_all(widgets)
        self._show_earlier()
        self.scroll_end(animate=False, immediate=False)

    def _show_earlier(self) -> None:
        """Say at the top how much is not on screen, and where to read it all."""
        parts = [
            f"{n} earlier {what}{'' if n == 1 else 's'}"
            for n, what in ((self.hidden_turns, "turn"), (self.dropped, "block"))
            if n
        ]
        if not parts:
            return
        text = Text(f"… {' and '.join(parts)} not shown", style="dim")
        if self.export_hint:
            text.append(f" · {self.export_hint}", style="dim")
        if self._earlier is None:
            self._earlier = Static(text, classes="notice earlier")
            self.mount(self._earlier, before=0)
        else:
            self._earlier.update(text)

    def clear(self) -> None:
        """Remove everything (``/clear``)."""
        self.end_stream()
        self.tools.clear()
        self.anchor(False)  # taken again once the new conversation overflows
        self.dropped = self.hidden_turns = 0
        self._earlier = None
        self.remove_children()
