"""Where a sub-agent's events are shown: its block under the ``task`` call that started it.

The app hands every event to :class:`SubagentBlocks` first: events of a sub-agent's session
(or of a sub-agent's sub-agent) go to the block of the outermost one through the bridge's
child messages; for a resumed session, :meth:`SubagentBlocks.restore` puts back each block as
it ended, collapsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monkey.events import Event, Handoff, SubagentStarted

if TYPE_CHECKING:
    from monkey.store.store import SessionStore
    from monkey.ui.widgets.subagent_block import SubagentBlock
    from monkey.ui.widgets.transcript import Transcript

__all__ = ["SubagentBlocks"]


class SubagentBlocks:
    """The sub-agents of one session and the block that shows each."""

    def __init__(self) -> None:
        self.children: set[str] = set()
        """Sessions of sub-agents this session started (and theirs): their events go to their blocks."""
        self.blocks: dict[str, SubagentBlock] = {}
        """The block showing each sub-agent's session (a descendant's: its ancestor's block)."""

    def route(self, event: Event) -> bool:
        """Note a sub-agent that starts; whether ``event`` is a sub-agent's own (shown in its block)."""
        child = event.session_id in self.children
        if isinstance(event, SubagentStarted):
            self.children.add(event.child_session_id)
        return child

    def began(self, event: SubagentStarted, transcript: Transcript) -> None:
        """A sub-agent of this session started: its block goes under the ``task`` call."""
        from monkey.ui.widgets.subagent_block import SubagentBlock

        block = SubagentBlock(event)
        self.blocks[event.child_session_id] = block
        transcript.add_subagent(block, event.call_id)

    def activity(self, event: Event) -> None:
        """An event of a sub-agent (or of one it started): into the outermost one's block."""
        block = self.blocks.get(event.session_id)
        if block is None:
            return
        if isinstance(event, SubagentStarted):
            block.nested(event)
            self.blocks[event.child_session_id] = block
        else:
            block.add(event)

    def ended(self, child_session_id: str, handoff: Handoff) -> None:
        """A sub-agent handed its work back: its block says so."""
        block = self.blocks.get(child_session_id)
        if block is not None and block.session_id == child_session_id:
            block.finish(handoff)

    async def restore(self, store: SessionStore, session_id: str, transcript: Transcript) -> None:
        """Under each shown ``task`` call of a resumed session, its sub-agent's block as it ended."""
        from monkey import events as ev
        from monkey.store import StoreError
        from monkey.ui.widgets.subagent_block import SubagentBlock

        try:
            lines = await store.event_lines(session_id, ("subagent_started", "subagent_completed"))
            blocks: dict[str, SubagentBlock] = {}
            for line in lines:
                event = ev.decode(line)
                if isinstance(event, ev.SubagentStarted) and event.call_id in transcript.tools:
                    block = blocks[event.child_session_id] = SubagentBlock(event)
                    for raw in await store.event_lines(event.child_session_id, ("tool_call", "tool_result")):
                        block.add(ev.decode(raw))
                elif isinstance(event, ev.SubagentCompleted) and event.child_session_id in blocks:
                    blocks[event.child_session_id].finish(event.handoff)
        except (StoreError, ev.DecodeError):
            return  # the transcript shows the task calls and their handoffs anyway
        for block in blocks.values():
            block.collapsed = True  # earlier work: one line until opened
            transcript.add_subagent(block, block.call_id)
