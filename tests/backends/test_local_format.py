"""The local model's reply format, without a model: schema, prompt, history, streaming."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from monkey.backends import local_format

from monkey.backends.local_format import (
    FINAL_ANSWER,
    JsonStringDecoder,
    RepetitionGuard,
    ReplyScanner,
    _first_sentence,
    chat_messages,
    demonstration,
    reply_schema,
    tools_prompt,
)
from monkey.events import ToolCallSpec
from monkey.messages import Message, ModelRequest, ToolSpec
from monkey.tools.registry import ToolRegistry

WRITE = ToolSpec(
    name="file_write",
    description="Write a file.\n\nMore details nobody needs in the prompt.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)


def _cuts(text: str, data: st.DataObject) -> list[str]:
    """``text`` cut at arbitrary places chosen by hypothesis."""
    points = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


@given(text=st.text(), ensure_ascii=st.booleans(), data=st.data())
def test_json_string_decoder_any_cut_gives_the_original(text: str, ensure_ascii: bool, data: st.DataObject) -> None:
    encoded = json.dumps(text, ensure_ascii=ensure_ascii)[1:] + "}, tail"
    decoder = JsonStringDecoder()
    out = "".join(decoder.feed(piece) for piece in _cuts(encoded, data))
    assert out == text
    assert decoder.done
    assert decoder.rest == "}, tail"


def test_json_string_decoder_holds_back_an_incomplete_escape() -> None:
    decoder = JsonStringDecoder()
    assert decoder.feed("ab\\u00") == "ab"
    assert decoder.feed("e9\\ud83d") == "é"
    assert decoder.feed("\\ude00") == "😀"
    assert decoder.feed('\\"x"rest') == '"x'
    assert decoder.done and decoder.rest == "rest"


def test_json_string_decoder_replaces_lone_surrogates() -> None:
    decoder = JsonStringDecoder()
    assert decoder.feed('\\ud83dx\\udc00"') == "\ufffdx\ufffd"


@given(answer=st.text(), data=st.data())
def test_reply_scanner_streams_a_final_answer(answer: str, data: st.DataObject) -> None:
    raw = json.dumps({"name": FINAL_ANSWER, "arguments": {"answer": answer}})
    scanner = ReplyScanner()
    streamed = "".join(scanner.feed(piece) for piece in _cuts(raw, data))
    assert streamed == answer == scanner.answer
    assert scanner.is_final_answer and scanner.answer_complete


def test_reply_scanner_does_not_stream_a_tool_call() -> None:
    raw = json.dumps({"name": "file_write", "arguments": {"path": "a", "content": "answer"}})
    scanner = ReplyScanner()
    assert "".join(scanner.feed(c) for c in raw) == ""
    assert scanner.name == "file_write" and scanner.raw == raw


def test_reply_schema_is_one_branch_per_tool_plus_the_final_answer() -> None:
    schema = reply_schema([WRITE])
    names = [branch["properties"]["name"]["const"] for branch in schema["anyOf"]]
    assert names == ["file_write", FINAL_ANSWER]
    first = schema["anyOf"][0]
    assert list(first["properties"]) == ["name", "arguments"]
    assert first["required"] == ["name", "arguments"]
    assert first["properties"]["arguments"] == WRITE.parameters


def test_tools_prompt_lists_tools_and_examples() -> None:
    prompt = tools_prompt([WRITE])
    assert "- file_write(path: string, content: string): Write a file." in prompt
    assert "More details" not in prompt
    assert "User: Create a file night.py that prints Good night" in prompt
    assert (
        '{"name": "file_write", "arguments": {"path": "night.py", "content": "print(\\"Good night\\")\\n"}}' in prompt
    )
    assert f'{{"name": "{FINAL_ANSWER}", "arguments": {{"answer": "Paris."}}}}' in prompt
    assert "{tools}" not in prompt and "{examples}" not in prompt


def test_tools_prompt_shows_one_example_call_of_an_offered_tool() -> None:
    """One example call, then the answer to a question: more examples made SmolLM2-135M go on
    calling the other examples' tools after its task was done (measured by local_tasks)."""
    read = ToolSpec(
        name="file_read",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    assert '"name": "file_read", "arguments": {"path": "style.cfg"}' in tools_prompt([read])
    full = tools_prompt(ToolRegistry.default().specs())
    examples = full.split("# Examples", 1)[1]
    assert [json.loads(line)["name"] for line in examples.splitlines() if line.startswith("{")] == [
        "file_write",
        FINAL_ANSWER,
    ]


def test_tools_prompt_describes_each_tool_in_its_first_sentence() -> None:
    tool = ToolSpec(
        name="file_read",
        description="Read a text file. Gives back its text.\n\nMore.",
        parameters={"type": "object", "properties": {"path": {"type": "string", "description": "Where."}}},
    )
    assert "- file_read(path: string (optional)): Read a text file.\n" in tools_prompt([tool])


@given(st.text())
def test_first_sentence_is_a_prefix_of_the_paragraph_with_no_sentence_end_inside(text: str) -> None:
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    sentence = _first_sentence(text, limit=10_000)
    assert paragraph.startswith(sentence)
    assert not re.search(r"[.!?]\s", sentence)
    assert len(_first_sentence(text, limit=20)) <= 20


def test_every_canned_example_is_a_valid_call_of_the_real_tool() -> None:
    """The examples are checked against monkey's real tool schemas, and code files hold code."""
    specs = {s.name: s for s in ToolRegistry.default().specs()}
    examples = json.loads((Path(local_format.__file__).parent / "local_examples.json").read_text())
    assert examples["calls"], "no examples"
    for example in examples["calls"]:
        tool = specs[example["name"]]
        jsonschema.validate(example["arguments"], tool.parameters)
        path = example["arguments"].get("path", "")
        if example["name"] == "file_write" and path.endswith(".py"):
            compile(example["arguments"]["content"], path, "exec")  # real Python, not a sentence
    writes = [e for e in examples["calls"] if e["name"] == "file_write"]
    assert any(e["arguments"]["path"].endswith(".py") for e in writes), "an example writes real code"


def test_demonstration_is_a_whole_exchange_of_the_first_offered_example() -> None:
    demo = demonstration(ToolRegistry.default().specs())
    assert [m["role"] for m in demo] == ["user", "assistant", "user", "assistant"]
    call = json.loads(demo[1]["content"])
    assert call["name"] == "file_write" and call["arguments"]["path"].endswith(".py")
    assert demo[2]["content"].startswith("Result of file_write (ok):\n")
    assert json.loads(demo[3]["content"])["name"] == FINAL_ANSWER
    assert demonstration([]) == []


def test_tools_prompt_example_for_an_unknown_tool_follows_its_schema() -> None:
    grep = ToolSpec(
        name="grep",
        description="Search.",
        parameters={
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["pattern"],
        },
    )
    prompt = tools_prompt([grep])
    assert "- grep(pattern: string, n: integer (optional)): Search." in prompt
    assert '{"name": "grep", "arguments": {"pattern": "..."}}' in prompt


def test_chat_messages_render_history_in_the_reply_format() -> None:
    call = ToolCallSpec(id="c1", name="file_write", arguments={"path": "a.py", "content": "x"})
    request = ModelRequest(
        system="You are monkey.",
        tools=[WRITE],
        messages=[
            Message(role="user", content="make a.py"),
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id="c1", content="wrote a.py"),
            Message(role="tool", tool_call_id="c9", name="file_write", content="denied", is_error=True),
            Message(role="assistant", content="Done."),
        ],
    )
    msgs = chat_messages(request)
    demo = demonstration(request.tools)
    assert [m["role"] for m in demo] == ["user", "assistant", "user", "assistant"]
    assert json.loads(demo[-1]["content"])["name"] == FINAL_ANSWER, "the demonstration ends with an answer"
    assert msgs[1 : 1 + len(demo)] == demo
    msgs = msgs[:1] + msgs[1 + len(demo) :]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "user", "assistant"]
    assert msgs[0]["content"].startswith("You are monkey.\n\n# How to reply")
    assert json.loads(msgs[2]["content"]) == {"name": "file_write", "arguments": call.arguments}
    assert msgs[3]["content"] == "Result of file_write (ok):\nwrote a.py"
    assert msgs[4]["content"] == "Result of file_write (error):\ndenied"
    assert json.loads(msgs[5]["content"]) == {"name": FINAL_ANSWER, "arguments": {"answer": "Done."}}


def test_chat_messages_without_tools_are_plain_text() -> None:
    request = ModelRequest(
        system="Be brief.",
        messages=[Message(role="user", content="hi"), Message(role="assistant", content="hello")],
    )
    assert chat_messages(request) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_repetition_guard_stops_a_reply_stuck_in_a_loop() -> None:
    guard = RepetitionGuard()
    pieces = ['{"name": "file_write", "arguments": {"path": "a.py", "content": "'] + ["Hello, world!\\n"] * 60
    hits = [guard.feed(p) for p in pieces]
    assert any(hits) and not any(hits[:30])


def test_repetition_guard_leaves_ordinary_text_alone() -> None:
    source = Path(__file__).read_text(encoding="utf-8")  # code, with its own repeated bits
    guard = RepetitionGuard(every=1)
    assert not any(guard.feed(source[i : i + 7]) for i in range(0, len(source), 7))
