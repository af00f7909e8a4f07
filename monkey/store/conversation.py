"""The conversation as typed nodes, derived from the event stream as it is stored.

A :class:`Conversation` follows the events of one session and keeps the nodes that are in
context (what the model is sent), in order: a ``turn_started`` gives a user node, a
``message_completed`` an assistant node, a ``tool_result`` a tool node (paired with its
call by id), a ``context_compacted`` a summary node in place of the compacted ones, a
``conversation_cleared`` (``/clear``) takes every node out of context. Nodes
are written in the same transaction as the events they come from, so what is on disk
always agrees with itself, even after ``kill -9``.

The agent is the authority on its own message list: at the end of each turn the derived
list is reconciled with the agent's (:meth:`Conversation.reconcile`), so a resumed session
sends exactly what the agent would have sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from monkey import events as ev
from monkey.messages import STOPPED_WHILE_RUNNING, Message

__all__ = ["Node", "NodeKind", "Conversation", "message_kind", "NOT_RUN", "encode_message", "decode_message"]

NodeKind = str
"""``user``, ``assistant``, ``tool`` or ``summary``."""

NOT_RUN = "not run: the turn was stopped"
"""The result the loop gives a tool call that never ran (see ``Agent._close_unanswered``)."""

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Message)


def encode_message(message: Message) -> bytes:
    """A message as stored in a node."""
    return _encoder.encode(message)


def decode_message(data: bytes) -> Message:
    """A stored node's message (raises ``msgspec.DecodeError`` / ``ValidationError``)."""
    return _decoder.decode(data)


@dataclass
class Node:
    """One node of the conversation."""

    seq: int
    kind: NodeKind
    message: Message
    tokens: int = 0


def message_kind(message: Message, summaries: set[str]) -> NodeKind:
    """The node kind of a message; a user message whose text is a known summary is a summary."""
    if message.role == "user" and message.content in summaries:
        return "summary"
    return message.role


@dataclass
class Conversation:
    """The in-context nodes of one session and the changes not yet written."""

    nodes: list[Node] = field(default_factory=list)
    next_seq: int = 1
    count: Callable[[Message], int] = lambda m: 0
    summaries: set[str] = field(default_factory=set)
    new: list[Node] = field(default_factory=list)
    """Nodes made since the last :meth:`take`."""
    excluded: list[int] = field(default_factory=list)
    """Sequence numbers taken out of context since the last :meth:`take`."""
    results: dict[str, Message] = field(default_factory=dict)
    """Tool results held until the results of earlier calls arrive."""
    started: set[str] = field(default_factory=set)
    """Calls stored as started (``tool_started``): stopped without a result, they may have run."""

    @property
    def messages(self) -> list[Message]:
        """The messages in context, in order."""
        return [n.message for n in self.nodes]

    def _append(self, kind: NodeKind, message: Message) -> None:
        node = Node(self.next_seq, kind, message, self.count(message))
        self.next_seq += 1
        self.nodes.append(node)
        self.new.append(node)

    def _exclude_from(self, index: int) -> None:
        self.excluded.extend(n.seq for n in self.nodes[index:])
        del self.nodes[index:]

    def apply(self, event: ev.Event) -> None:
        """Follow one event of the stream."""
        match event:
            case ev.TurnStarted():
                self._append("user", Message(role="user", content=event.prompt, images=list(event.images)))
            case ev.MessageCompleted():
                self._append(
                    "assistant",
                    Message(
                        role="assistant",
                        content=event.text,
                        thinking=event.thinking,
                        thinking_signature=event.thinking_signature,
                        tool_calls=list(event.tool_calls),
                    ),
                )
            case ev.ToolResult():
                self.results[event.call_id] = Message(
                    role="tool",
                    tool_call_id=event.call_id,
                    name=event.name,
                    content=event.output,
                    is_error=not event.ok,
                    images=list(event.images),
                )
                self._release(everything=False)
            case ev.IterationStarted():
                self._release(everything=True)
            case ev.TurnCompleted():
                self._release(everything=True)
                calls, answered = self._last_group()
                for call in calls:
                    if call.id not in answered:
                        said = STOPPED_WHILE_RUNNING if call.id in self.started else NOT_RUN
                        self._append(
                            "tool",
                            Message(role="tool", tool_call_id=call.id, name=call.name, content=said, is_error=True),
                        )
                self.started.clear()
            case ev.ToolStarted():
                self.started.add(event.call_id)
            case ev.ConversationCleared():
                self._exclude_from(0)
                self.results.clear()
                self.started.clear()
            case ev.ContextCompacted():
                kept = self.messages[event.messages_compacted :]
                self.summaries.add(event.summary)
                self._exclude_from(0)
                self._append("summary", Message(role="user", content=event.summary))
                for message in kept:
                    self._append(message_kind(message, self.summaries), message)
            case _:
                pass

    def _last_group(self) -> tuple[list, set[str]]:
        """The tool calls of the last message that has some, and the ids already answered after it."""
        answered: set[str] = set()
        for node in reversed(self.nodes):
            message = node.message
            if message.role == "tool":
                answered.add(message.tool_call_id)
            elif message.tool_calls:
                return message.tool_calls, answered
            elif message.role == "assistant" or message.role == "user":
                return [], answered
        return [], answered

    def _release(self, *, everything: bool) -> None:
        """Append held tool results in the order of the calls (the loop's order), not of completion.

        Results are released as soon as every earlier call of the same message has its own;
        ``everything`` releases the rest (the batch is over).
        """
        if not self.results:
            return
        calls, answered = self._last_group()
        for call in calls:
            if call.id in answered:
                continue
            message = self.results.pop(call.id, None)
            if message is None:
                if not everything:
                    return
                continue
            self._append("tool", message)
        if everything:
            for message in self.results.values():  # results of calls not in the last message
                self._append("tool", message)
            self.results.clear()

    def reconcile(self, messages: list[Message]) -> bool:
        """Make the in-context nodes equal ``messages`` (the agent's); returns whether they differed."""
        nodes = self.nodes
        same = 0
        limit = min(len(nodes), len(messages))
        while same < limit and (nodes[same].message is messages[same] or nodes[same].message == messages[same]):
            same += 1
        if same == len(nodes) == len(messages):
            return False
        self._exclude_from(same)
        for message in messages[same:]:
            self._append(message_kind(message, self.summaries), message)
        return True

    def take(self) -> tuple[list[Node], list[int]]:
        """The new nodes and exclusions since the last call, clearing both."""
        new, excluded = self.new, self.excluded
        self.new, self.excluded = [], []
        return new, excluded
