"""The app's handlers of the bridge's messages (:func:`monkey.ui.bridge.translate`): each hands one
down to a widget — the transcript, the event pane, the status bar, the header, a sub-agent's block.

A mixin of :class:`monkey.ui.app.MonkeyApp` (the attributes it uses are the app's), kept apart so
the app module stays about what it shows and when.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monkey.ui.widgets.app_header import AppHeader

if TYPE_CHECKING:
    from monkey.ui import bridge

__all__ = ["BridgeHandlers"]


class BridgeHandlers:
    """The bridge messages' handlers, for the app."""

    if TYPE_CHECKING:  # what the app provides
        attention: Any
        last_reason: str
        last_result: str
        last_message: str
        _events: Any
        _subagents: Any
        query_one: Any

        @property
        def transcript(self) -> Any: ...
        @property
        def status(self) -> Any: ...

    def on_subagent_began(self, message: bridge.SubagentBegan) -> None:
        self._subagents.began(message.event, self.transcript)

    def on_subagent_activity(self, message: bridge.SubagentActivity) -> None:
        self._subagents.activity(message.event)

    def on_subagent_ended(self, message: bridge.SubagentEnded) -> None:
        self._subagents.ended(message.event.child_session_id, message.event.handoff)

    # -- bridge messages -------------------------------------------------------------

    def on_event_logged(self, message: bridge.EventLogged) -> None:
        event = message.event
        if event.type == "session_started" and event.session_id not in self._subagents.children:
            self._events.main_session = event.session_id
        self._events.add(event)

    def on_stream_delta(self, message: bridge.StreamDelta) -> None:
        self.transcript.add_delta(message.kind, message.text)

    def on_message_done(self, message: bridge.MessageDone) -> None:
        self.transcript.end_stream()

    def on_tool_called(self, message: bridge.ToolCalled) -> None:
        self.transcript.add_tool(message.call_id, message.name, message.arguments)

    def on_tool_progress(self, message: bridge.ToolProgress) -> None:
        block = self.transcript.tools.get(message.call_id)
        if block is not None:
            block.progress(message.text, message.state)

    def on_tool_finished(self, message: bridge.ToolFinished) -> None:
        block = self.transcript.tools.get(message.call_id)
        if block is not None:
            block.finish(message.ok, message.output, message.duration_ms, message.diff, message.wait_ms)

    def on_notice(self, message: bridge.Notice) -> None:
        self.transcript.add_notice(message.text, message.level)

    def on_status_changed(self, message: bridge.StatusChanged) -> None:
        self.status.update_fields(message.fields)
        if "backend" in message.fields or "model" in message.fields:
            self.query_one(AppHeader).set_backend(message.fields.get("backend"), message.fields.get("model"))

    def on_instructions_read(self, message: bridge.InstructionsRead) -> None:
        self.query_one(AppHeader).set_instructions(message.paths, more=message.more)

    def on_turn_done(self, message: bridge.TurnDone) -> None:
        self.last_reason = message.reason
        self.last_result = message.result
        self.last_message = message.message
        self.attention.turn_ended(message.reason)
        self.transcript.end_stream()
        self.transcript.end_tools("cancelled" if message.reason == "cancelled" else "stopped")
        if message.reason == "denied" and self.transcript.shows(message.message):  # the call's block says why
            self.transcript.add_notice("turn ended", "warning")
        elif message.reason != "completed":
            self.transcript.add_notice(
                f"turn ended: {message.message or message.reason}",
                "warning" if message.reason == "cancelled" else "error",
            )
        elif message.message:  # completed, but the answer was cut off (the stop reason says why)
            self.transcript.add_notice(message.message, "warning")
