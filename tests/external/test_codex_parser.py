"""The Codex ``exec --json`` parser on hand-made shapes (from the docs; the real CLI's recordings are in
test_codex_recorded.py), an interrupted turn, and junk."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.backends.codex.parser import CodexStreamParser
from tests.external.test_claude_parser import plain

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"


def parse(data: bytes, chunks: list[int] | None = None, **kw) -> tuple[CodexStreamParser, list]:
    p = CodexStreamParser(**kw)
    events: list = []
    pos = 0
    for size in chunks or []:
        events += p.feed(data[pos:pos + size])
        pos += size
    events += p.feed(data[pos:]) + p.close()
    return p, events


def test_full_turn() -> None:
    p, events = parse((FIXTURES / "exec_full.jsonl").read_bytes())
    assert p.thread_id == "0199a213-81c0-7800-8aa1-bbab2a035a53" and p.error == "" and p.unknown == 0
    assert events[0].type == "agent_session" and events[0].agent == "codex"
    calls = [(e.call_id, e.name) for e in events if e.type == "tool_call"]
    assert calls == [("item_1", "shell"), ("item_2", "todo_list"), ("item_3", "apply_patch"),
                     ("item_2", "todo_list"), ("item_4", "shell"), ("item_5", "docs.search")]
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert results["item_1"].ok and results["item_1"].output == "README.md\n"
    assert not results["item_4"].ok and "exit code 1" in results["item_4"].output
    assert results["item_3"].output == "add /tmp/proj/hello.txt"
    assert "found" in results["item_5"].output
    assert [e.fatal for e in events if e.type == "error"] == [False, False]
    assert [e.text for e in events if e.type == "thinking_delta"][0].startswith("**Checking")
    usage = next(e for e in events if e.type == "usage")
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (315, 24448, 122)
    assert events[-1].type == "message_completed" and events[-1].text == "Created hello.txt."
    assert events[-1].tool_calls == []


def test_usage_is_cumulative_over_the_thread() -> None:
    _, events = parse((FIXTURES / "exec_full.jsonl").read_bytes(), previous_usage=(24000, 24000, 100))
    usage = next(e for e in events if e.type == "usage")
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (315, 448, 22)


def test_failed_turn() -> None:
    p, events = parse((FIXTURES / "exec_failed.jsonl").read_bytes())
    assert "Incorrect API key" in p.error and p.error.startswith("Codex failed")
    assert not [e for e in events if e.type == "message_completed"]


def test_interrupted_turn_has_no_ending() -> None:
    p, events = parse((FIXTURES / "exec_interrupted.jsonl").read_bytes())
    assert "incomplete" in p.error
    assert [e.type for e in events] == ["agent_session", "thinking_delta", "tool_call", "raw"]
    assert p.unknown == 1  # the line the kill cut off


def test_streaming_message_updates_are_not_repeated() -> None:
    lines = [b'{"type":"item.updated","item":{"id":"m","type":"agent_message","text":"Hel"}}',
             b'{"type":"item.updated","item":{"id":"m","type":"agent_message","text":"Hello"}}',
             b'{"type":"item.completed","item":{"id":"m","type":"agent_message","text":"Hello!"}}',
             b'{"type":"item.completed","item":{"id":"x","type":"brand_new_item"}}',
             b'{"type":"turn.completed"}']
    p, events = parse(b"\r\n".join(lines))  # CRLF, no final newline
    assert [e.text for e in events if e.type == "text_delta"] == ["Hel", "lo", "!"]
    assert p.unknown == 1 and p.error == "" and events[-1].text == "Hello!"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=300), max_size=40))
def test_any_chunking_gives_the_same_events(chunks: list[int]) -> None:
    data = (FIXTURES / "exec_full.jsonl").read_bytes()
    assert plain(parse(data, chunks)[1]) == plain(parse(data)[1])


def test_cut_at_every_byte_never_raises() -> None:
    data = (FIXTURES / "exec_full.jsonl").read_bytes()
    for cut in range(len(data) + 1):
        p, events = parse(data[:cut])
        assert p.error or cut >= len(data) - 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([
    b'{"type":"item.completed","item":{"id":1}}', b'{"type":"item.started","item":{"id":"a","type":"todo_list"}}',
    b'{"type":"turn.failed","error":"x"}', b'{"type":"item.completed","item":{"id":"c","type":"command_execution"}}',
    b'{"type":"thread.started","thread_id":5}', b'{"type":"error"}'])), max_size=30))
def test_junk_never_raises(lines: list[bytes]) -> None:
    data = b"\n".join(lines)
    p, events = parse(data)
    assert p.unknown <= len(data.split(b"\n"))
