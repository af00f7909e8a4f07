"""Conversation conversion between monkey's format and the Anthropic / OpenAI formats."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.backends.convert import NO_RESULT, paired, safe_tool_id, to_anthropic, to_openai
from monkey.events import ToolCallSpec
from monkey.messages import Message, ModelRequest

ids = st.text(min_size=1, max_size=12)


@st.composite
def conversations(draw) -> list[Message]:
    """Random conversations: text, tool calls with some results missing, stray results."""
    out: list[Message] = [Message(role="user", content=draw(st.text(max_size=20)))]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "stray"]))
        if kind == "user":
            out.append(Message(role="user", content=draw(st.text(max_size=20))))
        elif kind == "assistant":
            out.append(Message(role="assistant", content=draw(st.text(max_size=20))))
        elif kind == "calls":
            calls = [
                ToolCallSpec(id=draw(ids), name="file_read", arguments={"path": draw(st.text(max_size=5))})
                for _ in range(draw(st.integers(1, 3)))
            ]
            out.append(Message(role="assistant", content=draw(st.text(max_size=10)), tool_calls=calls))
            for call in calls:
                if draw(st.booleans()):
                    out.append(
                        Message(
                            role="tool",
                            tool_call_id=call.id,
                            name=call.name,
                            content=draw(st.text(max_size=10)),
                            is_error=draw(st.booleans()),
                        )
                    )
        else:
            out.append(Message(role="tool", tool_call_id=draw(ids), name="x", content="stray"))
    return out


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_anthropic_every_tool_use_is_answered_in_the_next_user_message(messages):
    body = to_anthropic(ModelRequest(system="s", messages=messages))
    msgs = body["messages"]
    assert msgs[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(msgs, msgs[1:], strict=False))  # roles alternate
    for i, msg in enumerate(msgs):
        assert msg["content"], "no empty content"
        uses = [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        for b in msg["content"]:
            if b["type"] in ("tool_use", "tool_result"):
                assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", b.get("id") or b.get("tool_use_id"))
        if uses:
            nxt = msgs[i + 1]["content"]
            results = [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"]
            assert set(uses) <= set(results)
            kinds = [b["type"] for b in nxt]
            assert kinds == sorted(kinds, key=lambda k: k != "tool_result")  # results lead
    assert msgs[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


@settings(max_examples=150, deadline=None)
@given(conversations())
def test_openai_every_tool_call_has_a_tool_message(messages):
    msgs = to_openai(ModelRequest(system="s", messages=messages))
    assert msgs[0] == {"role": "system", "content": "s"}
    pending: set[str] = set()
    for msg in msgs[1:]:
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in pending
            pending.discard(msg["tool_call_id"])
            continue
        assert not pending, "results come right after their calls"
        if msg["role"] == "assistant":
            assert isinstance(msg["content"], str)
            pending = {c["id"] for c in msg.get("tool_calls", [])}
    assert not pending


def test_missing_results_are_filled_and_stray_ones_kept_as_text():
    call = ToolCallSpec(id="a", name="file_read")
    out = paired(
        [
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id="zzz", name="shell_execute", content="orphan"),
        ]
    )
    assert [m.role for m in out] == ["user", "assistant", "tool", "user"]
    assert out[2].content == NO_RESULT and out[2].is_error
    assert "orphan" in out[3].content


def test_safe_ids_are_stable_and_keep_pairs():
    assert safe_tool_id("call.1:x") == safe_tool_id("call.1:x") != safe_tool_id("call.1;x")
    assert safe_tool_id("call.1:x").startswith("call_1_x_")
    assert safe_tool_id("toolu_01AbC-d") == "toolu_01AbC-d"
    assert safe_tool_id("", 3) == "call_3"
    assert len(safe_tool_id("x" * 300)) == 64
