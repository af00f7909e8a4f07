"""The JSON-RPC framing, by property: however the bytes are cut, the same messages come out."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.backends.plugin.rpc import BadLine, Frame, LineTooLong, RpcReader, kind

texts = st.text(max_size=40)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
notifications = st.builds(
    lambda t, d: {"jsonrpc": "2.0", "method": "stream", "params": {"type": t, "data": d}},
    st.sampled_from(["text", "thinking", "usage", "tool_use", "mystery"]),
    values,
)
responses = st.builds(lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, st.integers(1, 99), values)
messages = st.lists(notifications | responses, min_size=1, max_size=12)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """``data`` in pieces at ``points`` (any positions, any order)."""
    marks = sorted({p % (len(data) + 1) for p in points})
    edges = [0, *marks, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def read_all(chunks: list[bytes], limit: int = 1 << 20) -> list[Frame | BadLine]:
    reader = RpcReader(limit)
    out: list[Frame | BadLine] = []
    for chunk in chunks:
        out += reader.feed(chunk)
    return out + reader.close()


def as_dict(frame: Frame) -> dict:
    return {
        k: getattr(frame, k)
        for k in ("jsonrpc", "id", "method", "params", "result")
        if getattr(frame, k) is not None and repr(getattr(frame, k)) != "UNSET"
    }


@settings(max_examples=150, deadline=None)
@given(messages, st.lists(st.integers(0, 10**6), max_size=30), st.booleans())
def test_any_split_gives_the_same_messages(msgs, points, crlf):
    end = b"\r\n" if crlf else b"\n"
    data = b"".join(json.dumps(m).encode() + end for m in msgs)
    frames = read_all(cut(data, points))
    assert all(isinstance(f, Frame) for f in frames)
    expected = [{k: v for k, v in m.items() if v is not None and not (k == "params" and v is None)} for m in msgs]
    assert [as_dict(f) for f in frames] == expected
    assert [kind(f) for f in frames] == ["notification" if "method" in m else "response" for m in msgs]


@settings(max_examples=150, deadline=None)
@given(messages, st.binary(min_size=1, max_size=30), st.integers(0, 12), st.lists(st.integers(0, 10**6), max_size=20))
def test_a_bad_line_is_one_bad_line_and_the_rest_still_reads(msgs, junk, where, points):
    junk = junk.replace(b"\n", b"") + b"\xff\xfe"  # never UTF-8, never JSON
    lines = [json.dumps(m).encode() for m in msgs]
    at = where % (len(lines) + 1)
    lines.insert(at, junk)
    frames = read_all(cut(b"\n".join(lines) + b"\n", points))
    bad = [i for i, f in enumerate(frames) if isinstance(f, BadLine)]
    assert bad == [at]
    assert frames[at].why in ("not valid JSON", "not valid UTF-8", "not a JSON object")
    assert len(frames) == len(msgs) + 1


@pytest.mark.parametrize("text", ['"\\ud800"', "caf\u00e9 \U0001f600"])
def test_strings_that_json_allows_pass_through(text):
    line = json.dumps({"jsonrpc": "2.0", "method": "stream", "params": {"type": "text", "data": text}}).encode()
    [frame] = read_all([line + b"\n"])
    assert isinstance(frame, Frame) and frame.params["data"] == text


def test_invalid_utf8_inside_a_string_is_a_bad_line():
    [frame] = read_all([b'{"jsonrpc":"2.0","method":"stream","params":{"type":"text","data":"\xc3\x28"}}\n'])
    assert isinstance(frame, BadLine) and frame.why == "not valid UTF-8"
    assert "?" in frame.shown() or "\ufffd" in frame.shown()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 200), st.lists(st.integers(1, 5000), min_size=1, max_size=30))
def test_a_line_over_the_limit_raises_however_it_is_cut(extra, sizes):
    limit = 1000
    data = b"x" * (limit + 1 + extra) + b"\n"
    reader = RpcReader(limit)
    with pytest.raises(LineTooLong):
        at, i = 0, 0
        while at < len(data):
            size = sizes[i % len(sizes)]
            reader.feed(data[at : at + size])
            at, i = at + size, i + 1


def test_shapes_that_are_no_message():
    frames = read_all([b'[1, 2]\n{"id": 1}\n{"method": 5}\n{"jsonrpc":"2.0","id":7,"error":{"code":1}}\n'])
    assert isinstance(frames[0], BadLine) and frames[0].why == "not a JSON object"
    assert [kind(f) for f in frames[1:]] == ["invalid", "invalid", "response"]
