"""Images from MCP tools go on to the model when the backend takes them: server-everything's
``get-tiny-image`` called through monkey, the Anthropic request (to the fake Messages API) carries
the PNG as a base64 image block in the tool_result, also after ``--continue`` from the stored
session; an OpenAI-compatible server gets it in a user message after the results (a tool message takes
only text), or a line saying why when it is set to take only text;
sessions stored before images were kept still read."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import msgspec

from monkey.backends.convert import to_anthropic, to_openai
from monkey.events import ToolImage, ToolResult, decode
from monkey.messages import Message, ModelRequest
from tests.support.cli import invoke
from tests.support.fakes.anthropic_server import FakeAnthropic, Stream, reply_events
from tests.support.fakes.openai_server import FakeOpenAI, Reply
from tests.support.mcp import EVERYTHING, needs_npm, results, write_servers

PNG = b"\x89PNG\r\n\x1a\n"
TOOL = "mcp__everything__get-tiny-image"


def _configure(home: Path) -> None:
    write_servers(home / "mcp.json", {"everything": {"command": str(EVERYTHING)}})
    (home / "config.toml").write_text('[approvals]\nallow = ["mcp__everything"]\n')


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@needs_npm
def test_the_anthropic_request_carries_the_mcp_image(monkey_home: Path, workspace: Path) -> None:
    _configure(monkey_home)
    with FakeAnthropic() as fake:
        fake.add(
            Stream(reply_events(tool_calls=[("toolu_1", TOOL, {})])),
            Stream(reply_events("a tiny image")),
            Stream(reply_events("still there")),
        )
        args = [
            "agent",
            "--backend",
            "anthropic",
            "--base-url",
            fake.url,
            "--api-key",
            "k",
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
        ]
        run = invoke([*args, "--task", "show me the tiny image"], home=monkey_home)
        assert run.returncode == 0, run.stderr
        (result,) = results(run.stdout)
        assert result["ok"] and "[image 1: image/png," in result["output"]
        assert result["images"][0]["media_type"] == "image/png"

        (block,) = _tool_results(fake.requests[1]["body"])
        text, image = block["content"]
        assert text["type"] == "text" and "[image 1: image/png," in text["text"]
        assert image["type"] == "image" and image["source"]["type"] == "base64"
        assert image["source"]["media_type"] == "image/png"
        assert base64.b64decode(image["source"]["data"]).startswith(PNG)
        assert image["source"]["data"] == result["images"][0]["data"]  # as the server gave it

        again = invoke([*args, "--continue", "--task", "is it still there?"], home=monkey_home)
        assert again.returncode == 0, again.stderr
        (block,) = _tool_results(fake.requests[2]["body"])  # read back from the stored session
        assert block["content"][1]["source"]["data"] == result["images"][0]["data"]


@needs_npm
def test_an_openai_compatible_server_gets_the_image_after_the_results_or_is_told_why(
    monkey_home: Path, workspace: Path
) -> None:
    """A tool message takes only text: a vision server gets the image in a user message right after the
    results; one set to take only text (``[openai] images = false``) gets a line saying why."""
    _configure(monkey_home)
    args = [
        "agent",
        "--backend",
        "openai",
        "--api-key",
        "k",
        "--model",
        "fake-model",
        "--cwd",
        str(workspace),
        "--output-format",
        "stream-json",
        "--task",
        "show me the tiny image",
    ]
    replies = [Reply(tool_calls=[("call_1", TOOL, {})]), Reply(text="an image")]
    with FakeOpenAI(replies) as fake:
        run = invoke([*args, "--base-url", fake.url], home=monkey_home)
        assert run.returncode == 0, run.stderr
        sent = fake.requests[1]["messages"]
    at = [m["role"] for m in sent].index("tool")
    assert "[image 1: image/png," in sent[at]["content"]
    assert sent[at + 1]["role"] == "user" and sent[at + 1]["content"][1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )

    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__everything"]\n[openai]\nimages = false\n')
    replies = [Reply(tool_calls=[("call_1", TOOL, {})]), Reply(text="no image here")]
    with FakeOpenAI(replies) as fake:
        run = invoke([*args, "--base-url", fake.url], home=monkey_home)
        assert run.returncode == 0, run.stderr
        (tool,) = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
        assert isinstance(tool["content"], str) and "[image 1: image/png," in tool["content"]
        assert "the image of this result not passed on: this server is set to take only text" in tool["content"]
        assert "base64" not in json.dumps(fake.requests[1]) and PNG.decode("latin-1") not in tool["content"]


def test_a_session_stored_before_images_still_reads() -> None:
    old_result = (
        b'{"type":"tool_result","ts":1.0,"session_id":"s1","call_id":"c1","name":"file_read","ok":true,'
        b'"output":"hi","duration_ms":1.0,"diff":"","wait_ms":0.0}'
    )
    event = decode(old_result)
    assert isinstance(event, ToolResult) and event.images == []
    old_node = (
        b'{"role":"tool","content":"hi","tool_calls":[],"tool_call_id":"c1","name":"file_read","is_error":false,'
        b'"thinking":"","thinking_signature":""}'
    )
    message = msgspec.json.decode(old_node, type=Message)
    assert message.images == []
    request = ModelRequest(system="", messages=[Message(role="assistant", tool_calls=[]), message])
    assert "images" not in json.dumps(to_anthropic(request))


def test_an_image_whose_call_is_gone_is_said_not_sent() -> None:
    image = ToolImage(media_type="image/png", data=base64.b64encode(PNG).decode())
    orphan = Message(
        role="tool", tool_call_id="gone", name="mcp__x__y", content="[image 1: image/png, 8 bytes]", images=[image]
    )
    request = ModelRequest(system="", messages=[Message(role="user", content="hi"), orphan])
    text = json.dumps(to_anthropic(request))
    assert "not passed on: the result's call is not in the conversation" in text and image.data not in text
    assert image.data not in json.dumps(to_openai(request))


def test_images_that_cannot_go_are_a_note() -> None:
    from mcp import types

    from monkey.mcp_client.results import MAX_IMAGE_BYTES, render_result

    big = base64.b64encode(b"x" * (MAX_IMAGE_BYTES + 1)).decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png"),
            types.ImageContent(type="image", data="not base64!", mimeType="image/png"),
            types.ImageContent(type="image", data=base64.b64encode(b"BM").decode(), mimeType="image/bmp"),
            types.ImageContent(type="image", data=big, mimeType="image/jpeg"),
            types.AudioContent(type="audio", data=base64.b64encode(b"RIFF").decode(), mimeType="audio/wav"),
        ]
    )
    text, is_error, images = render_result(result)
    assert not is_error and [i.media_type for i in images] == ["image/png"]
    lines = text.splitlines()
    assert lines[0] == "[image 1: image/png, 8 bytes]"
    assert "not valid base64" in lines[1] and "only PNG, JPEG, GIF and WebP" in lines[2]
    assert f"larger than {MAX_IMAGE_BYTES} bytes" in lines[3] and "no backend takes audio" in lines[4]
