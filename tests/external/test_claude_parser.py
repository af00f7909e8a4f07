"""The Claude Code stream-json parser on recorded shapes, cut, re-chunked and polluted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monkey.backends.claude_code.parser import ClaudeStreamParser
from monkey.backends.jsonl import LineFramer
from monkey.events import Event
from tests.support.external import plain

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
STREAMS = {p.stem: p.read_bytes() for p in sorted(FIXTURES.glob("*.jsonl"))}


def parse(data: bytes, chunks: list[int] | None = None) -> tuple[ClaudeStreamParser, list[Event]]:
    p = ClaudeStreamParser()
    events: list[Event] = []
    if chunks is None:
        events += p.feed(data)
    else:
        pos = 0
        for size in chunks:
            events += p.feed(data[pos : pos + size])
            pos += size
        events += p.feed(data[pos:])
    events += p.close()
    return p, events


def test_text_answer() -> None:
    p, events = parse(STREAMS["text"])
    kinds = [e.type for e in events]
    assert kinds == ["agent_session", "text_delta", "text_delta", "text_delta", "usage", "message_completed"]
    assert events[0].agent_session_id == p.session_id == "8f0c2a51-3d7e-4c1b-9a55-2f4e1d0b7c63"
    assert events[-1].text == "Hello from the fake server." and events[-1].tool_calls == []
    assert events[-2].cost_usd == pytest.approx(0.000141)
    assert p.error == "" and p.unknown == 0


def test_tool_call_assembled_once_from_partial_json() -> None:
    p, events = parse(STREAMS["tool_write"])
    calls = [e for e in events if e.type == "tool_call"]
    assert len(calls) == 1  # the assistant line repeating it adds nothing
    assert calls[0].name == "Write"
    assert calls[0].arguments == {"file_path": "/tmp/proj/hello.txt", "content": "hi there\n"}
    (result,) = [e for e in events if e.type == "tool_result"]
    assert result.call_id == "toolu_01W" and result.name == "Write" and result.ok
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == "I'll create hello.txt.Done: hello.txt is written."  # not doubled by the assistant lines
    assert [e.text for e in events if e.type == "thinking_delta"] == ["I should write the file."]
    assert events[-1].type == "message_completed" and events[-1].text == "Done: hello.txt is written."


def test_subagent_retry_and_compaction_without_partial_messages() -> None:
    p, events = parse(STREAMS["subagent"])
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == "Let me delegate.The folder does not exist."  # the sub-agent's text is not the answer
    assert [e.name for e in events if e.type == "tool_call"] == ["Task", "Bash"]
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert not results["toolu_B1"].ok and results["toolu_T1"].output == "There is no /nope."
    (retry,) = [e for e in events if e.type == "retry"]
    assert retry.attempt == 1 and retry.delay == pytest.approx(0.52)
    assert [e.tokens_before for e in events if e.type == "context_compacted"] == [155000]


def test_error_result_with_subtype_success_is_an_error() -> None:
    p, events = parse(STREAMS["api_error"])
    assert "api_error" in p.error and "boom" in p.error
    assert not [e for e in events if e.type == "message_completed"]


def test_missing_result_is_an_incomplete_end() -> None:
    data = STREAMS["tool_write"]
    cut = data[: data.index(b'"type": "user"')]
    p, events = parse(cut)
    assert p.result is None
    assert "without a result" in p.error and "incomplete" in p.error
    assert [e.type for e in events if e.type == "tool_call"] == ["tool_call"]


def test_junk_unknown_types_and_crlf() -> None:
    data = (
        b"Debugger listening on ws://127.0.0.1:9229\r\n"
        + STREAMS["text"].replace(b"\n", b"\r\n")
        + b'{"type": "brand_new", "x": 1}\n[1, 2]\n{"type": "stream_event", "event": 5}\n'
        + b'{"type": "system", "subtype": "status", "status": "compacting"}\n\xff\xfe\n\n'
    )
    p, events = parse(data)
    assert p.unknown == 5  # debug line, unknown type, a list, a stream_event that does not fit, not UTF-8
    assert [e.type for e in events].count("raw") == 6  # plus the known-but-unmapped status line
    assert plain([e for e in events if e.type != "raw"]) == plain(parse(STREAMS["text"])[1])


def test_final_line_without_newline_and_huge_line() -> None:
    big = "x" * (20 * 1024 * 1024)
    line = json.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_big", "content": big}],
            },
        }
    ).encode()
    data = STREAMS["text"].rstrip(b"\n")  # the result line has no newline
    p = ClaudeStreamParser()
    p.max_line = 32 << 20  # a line as long as max_line_bytes allows is read whole
    events = p.feed(line[:7]) + [e for i in range(7, len(line), 1 << 16) for e in p.feed(line[i : i + (1 << 16)])]
    events += p.feed(b"\n" + data) + p.close()
    assert events[0].type == "tool_result" and len(events[0].output) == len(big)
    assert events[-1].type == "message_completed" and p.error == ""


def _line_ends(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_cut_at_every_byte(name: str) -> None:
    """A stream cut anywhere gives exactly the events of its complete lines, then never raises."""
    data = STREAMS[name]
    per_prefix: dict[int, list] = {}
    for end in [0, *_line_ends(data)]:
        p = ClaudeStreamParser()
        per_prefix[end] = plain(p.feed(data[:end]))
    ends = sorted(per_prefix)
    for cut in range(len(data) + 1):
        whole = max(e for e in ends if e <= cut)
        p = ClaudeStreamParser()
        got = plain(p.feed(data[:cut]))
        assert got == per_prefix[whole]
        tail = p.close()
        if cut == whole:
            assert tail == []
        elif cut + 1 not in ends:  # a line cut short is one Raw, counted
            assert [e.type for e in tail] == ["raw"] and p.unknown == 1
        assert p.error or p.result is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(STREAMS)), chunks=st.lists(st.integers(min_value=1, max_value=400), max_size=60))
def test_any_chunking_gives_the_same_events(name: str, chunks: list[int]) -> None:
    data = STREAMS[name]
    assert plain(parse(data, chunks)[1]) == plain(parse(data)[1])


junk_line = st.one_of(
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")),
    st.dictionaries(
        st.sampled_from(["type", "subtype", "event", "message", "x"]),
        st.one_of(st.text(max_size=5), st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
        max_size=4,
    ).map(lambda d: json.dumps(d).encode()),
    st.sampled_from(
        [
            b'{"type": "stream_event", "event": {"type": "content_block_delta", "index": 99}}',
            b'{"type": "assistant", "message": {"content": [{"type": "tool_use"}]}}',
            b'{"type": "user", "message": {"content": [{"type": "tool_result"}]}}',
            b'{"type": "system", "subtype": "init"}',
            b'{"type": "result", "usage": 7}',
            b'{"type": "future_thing", "payload": {"deep": [1, 2, 3]}}',
        ]
    ),
)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(STREAMS)), data=st.data())
def test_junk_lines_never_change_the_intact_events(name: str, data: st.DataObject) -> None:
    lines = STREAMS[name].splitlines(keepends=True)
    polluted: list[bytes] = []
    for line in lines:
        polluted += [j + b"\n" for j in data.draw(st.lists(junk_line, max_size=2))]
        polluted.append(line)
    p, events = parse(b"".join(polluted))
    assert plain([e for e in events if e.type != "raw"]) == plain(
        [e for e in parse(STREAMS[name])[1] if e.type != "raw"]
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.lists(st.integers(min_value=1, max_value=64), max_size=40))
def test_arbitrary_bytes_never_raise(data: bytes, chunks: list[int]) -> None:
    p, events = parse(data, chunks)
    assert all(isinstance(e, Event) for e in events)


def test_framer_keeps_a_huge_line_whole() -> None:
    f = LineFramer()
    assert f.feed(b"a" * 100) == [] and f.pending == 100
    assert f.feed(b"b\r\nc") == [b"a" * 100 + b"b"]
    assert f.close() == b"c" and f.close() is None
