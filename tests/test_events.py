"""The JSON-lines codec of typed events: round trips, unknown input, garbage."""

from __future__ import annotations

import json
import types
import typing

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monkey import events as ev

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def strategy_for(tp: object) -> st.SearchStrategy:
    origin = typing.get_origin(tp)
    if tp is str:
        return st.text(max_size=50)
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return finite
    if tp is bool:
        return st.booleans()
    if tp is typing.Any:
        return json_values
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(tp))
    if origin is list:
        return st.lists(strategy_for(typing.get_args(tp)[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy_for(arg) for arg in typing.get_args(tp)])
    if tp is type(None):
        return st.none()
    if tp is msgspec.UnsetType:  # a field left out of the wire
        return st.just(msgspec.UNSET)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return st.builds(tp, **{f.name: strategy_for(f.type) for f in msgspec.structs.fields(tp)})
    raise AssertionError(f"no strategy for {tp!r}")


def event_strategy(cls: type[ev.Event]) -> st.SearchStrategy:
    hints = typing.get_type_hints(cls, include_extras=False)
    fields = {f.name: strategy_for(hints[f.name]) for f in msgspec.structs.fields(cls)}
    return st.builds(cls, **fields)


any_event = st.one_of([event_strategy(cls) for cls in ev.EVENT_TYPES.values()])


@given(any_event)
@settings(max_examples=400)
def test_round_trip(event: ev.Event) -> None:
    line = ev.encode_line(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1, "one event is one line"
    decoded = ev.decode_line(line)
    assert decoded == event
    assert type(decoded) is type(event)
    assert json.loads(line)["type"] == event.type


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_any_json_object_decodes(obj: dict) -> None:
    event = ev.decode(json.dumps(obj))
    assert isinstance(event, ev.Event)
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in ev.EVENT_TYPES:  # a list or an object is no type name
        assert isinstance(event, ev.Raw) and event.data == obj


@given(st.binary(max_size=200))
def test_garbage_raises_only_decode_error(data: bytes) -> None:
    try:
        ev.decode(data)
    except ev.DecodeError:
        pass


def test_tag_names_are_the_public_interface() -> None:
    required = {
        "session_started",
        "turn_started",
        "text_delta",
        "thinking_delta",
        "message_completed",
        "tool_call",
        "approval_requested",
        "approval_resolved",
        "tool_started",
        "tool_output",
        "tool_result",
        "checkpoint_created",
        "usage",
        "retry",
        "error",
        "turn_completed",
        "session_ended",
        "raw",
    }
    assert required <= set(ev.EVENT_TYPES)


def test_known_type_with_wrong_fields_is_kept_raw() -> None:
    event = ev.decode(b'{"type": "text_delta", "text": 5}', source="test")
    assert isinstance(event, ev.Raw) and event.data == {"type": "text_delta", "text": 5} and event.source == "test"


def test_non_object_is_a_decode_error() -> None:
    with pytest.raises(ev.DecodeError):
        ev.decode(b"[1, 2]")
    with pytest.raises(ev.DecodeError):
        ev.decode(b"{broken")
    assert ev.decode_line(b"   \n") is None


def test_events_are_immutable() -> None:
    event = ev.TextDelta(text="x")
    with pytest.raises(AttributeError):
        event.text = "y"  # type: ignore[misc]
