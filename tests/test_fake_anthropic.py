"""The fake Anthropic API of the tests (tests/support/fakes/anthropic_server.py), through the real
``anthropic`` SDK: queued answers first, then the answers Claude Code's tests choose by the prompt,
streamed or whole as the request asks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.support.fakes.anthropic_server import FakeAnthropic, Status, Stream, error_body, reply_events

if TYPE_CHECKING:
    import anthropic

TOOLS = [{"name": "Write", "description": "write a file", "input_schema": {"type": "object"}}]


def _ask(client: anthropic.Anthropic, prompt: str, *, stream: bool) -> anthropic.types.Message:
    kwargs: dict[str, Any] = {
        "model": "claude-fake",
        "max_tokens": 100,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": prompt}],
    }
    if stream:
        with client.messages.stream(**kwargs) as s:
            return s.get_final_message()
    return client.messages.create(**kwargs)


@pytest.mark.parametrize("stream", [True, False])
def test_answers_chosen_by_the_prompt(tmp_path, stream: bool) -> None:
    import anthropic  # the SDK only where it is used: collection stays cheap

    with FakeAnthropic(str(tmp_path)) as server:
        client = anthropic.Anthropic(api_key="sk-test", base_url=server.url, max_retries=0)
        tool = _ask(client, "please create hello.txt", stream=stream)
        assert tool.stop_reason == "tool_use" and tool.id == "msg_fake1"
        [text, call] = tool.content
        assert text.type == "text" and text.text == "I'll do it."
        assert call.type == "tool_use" and call.name == "Write"
        assert call.input == {"file_path": f"{tmp_path}/hello.txt", "content": "hi there\n"}
        hello = _ask(client, "say hello", stream=stream)
        assert hello.stop_reason == "end_turn" and hello.id == "msg_fake2"
        assert [b.text for b in hello.content if b.type == "text"] == ["Hello from the fake server (user messages: 1)."]
        with pytest.raises(anthropic.BadRequestError, match="refuses this on purpose"):
            _ask(client, "please fail now", stream=stream)
        assert (
            client.messages.count_tokens(model="claude-fake", messages=[{"role": "user", "content": "x"}]).input_tokens
            == 10
        )
        assert len(server.main_requests()) == 3 and len(server.requests) == 4  # the count offers no tools
        client.close()


def test_queued_answers_come_first_and_nothing_queued_is_a_500_without_a_workspace(tmp_path) -> None:
    import anthropic  # the SDK only where it is used: collection stays cheap

    with FakeAnthropic() as bare, FakeAnthropic(str(tmp_path)) as scripted:
        for server in (bare, scripted):
            server.add(Stream(reply_events("queued")), Status(429, error_body("rate_limit_error", "slow down")))
            client = anthropic.Anthropic(api_key="sk-test", base_url=server.url, max_retries=0)
            assert [b.text for b in _ask(client, "say hello", stream=True).content if b.type == "text"] == ["queued"]
            with pytest.raises(anthropic.RateLimitError):
                _ask(client, "say hello", stream=False)
            client.close()
        client = anthropic.Anthropic(api_key="sk-test", base_url=bare.url, max_retries=0)
        with pytest.raises(anthropic.InternalServerError, match="no answer queued"):
            _ask(client, "say hello", stream=False)
        client.close()
