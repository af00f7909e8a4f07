"""Images a person attaches go to the model as images, stored with the turn: ``@shot.png`` (and a full
path outside the workspace), ``file_read`` of an image, an ACP image block; through the real loop to
the fake Messages API and the fake chat-completions server; a backend that takes only text says so."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from monkey.backends.convert import images_note
from monkey.backends.local_format import chat_messages
from monkey.events import ToolImage
from monkey.messages import Message, ModelRequest
from tests.support.fakes.anthropic_server import FakeAnthropic, Stream, reply_events
from tests.support.fakes.openai_server import FakeOpenAI, Reply
from tests.support import images
from tests.support.cli import invoke, write_script

SHOT = images.png(640, 480)
B64 = base64.b64encode(SHOT).decode()


def _anthropic(fake: FakeAnthropic, workspace: Path, *more: str) -> list[str]:
    return ["agent", "--backend", "anthropic", "--base-url", fake.url, "--api-key", "k", "--cwd", str(workspace), *more]


def _images(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if b.get("type") == "image"] if isinstance(content, list) else []


def test_an_attached_image_goes_to_the_model_and_again_after_continue(workspace: Path, monkey_home: Path) -> None:
    (workspace / "shot.png").write_bytes(SHOT)
    with FakeAnthropic() as fake:
        fake.add(Stream(reply_events("a black picture")), Stream(reply_events("still black")))
        run = invoke(_anthropic(fake, workspace, "--task", "what is in @shot.png?"), home=monkey_home)
        assert run.returncode == 0, run.stderr
        assert "attached shot.png (PNG image, " in run.stderr and "bytes, 640×480)" in run.stderr
        first = fake.requests[0]["body"]["messages"][0]
        (image,) = _images(first["content"])
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": B64}
        assert first["content"][0] is not None and first["content"][0]["type"] == "image"  # images before the text
        again = invoke(_anthropic(fake, workspace, "--continue", "--task", "and now?"), home=monkey_home)
        assert again.returncode == 0, again.stderr
        (stored,) = _images(fake.requests[1]["body"]["messages"][0]["content"])  # read back from the store
        assert stored["source"]["data"] == B64


def test_an_image_outside_the_workspace_by_its_full_path_and_what_is_refused(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "Screenshots"
    outside.mkdir()
    (outside / "screen.gif").write_bytes(images.gif(30, 20))
    big = workspace / "huge.png"  # 50 MB (sparse): refused from its header, never read
    big.write_bytes(SHOT)
    with big.open("r+b") as f:
        f.truncate(50 * 1024 * 1024)
    (workspace / "fake.png").write_text("I am text\n")
    (tmp_path / "secret.txt").write_text("password\n")
    with FakeAnthropic() as fake:
        fake.add(Stream(reply_events("ok")))
        task = f"look at @{outside / 'screen.gif'} @huge.png @fake.png @{tmp_path / 'secret.txt'} @../secret.txt"
        run = invoke(_anthropic(fake, workspace, "--task", task), home=monkey_home)
        assert run.returncode == 0, run.stderr
    assert f"attached {outside / 'screen.gif'} (GIF image, " in run.stderr
    assert "@huge.png not attached: 52,428,800 bytes, over the 5,242,880-byte limit for an image" in run.stderr
    assert "@fake.png not attached: not a PNG, JPEG, GIF or WebP image" in run.stderr
    assert f"@{tmp_path / 'secret.txt'} not attached: " in run.stderr and "@../secret.txt not attached: " in run.stderr
    body = json.dumps(fake.requests[0]["body"])
    (image,) = _images(fake.requests[0]["body"]["messages"][0]["content"])
    assert image["source"]["media_type"] == "image/gif" and "password" not in body and "I am text" not in body


def test_file_read_of_an_image_gives_the_model_the_image(workspace: Path, monkey_home: Path) -> None:
    (workspace / "logo.webp").write_bytes(images.webp_vp8x(64, 32))
    with FakeAnthropic() as fake:
        fake.add(
            Stream(reply_events(tool_calls=[("toolu_1", "file_read", {"path": "logo.webp"})])),
            Stream(reply_events("a logo")),
        )
        run = invoke(
            _anthropic(fake, workspace, "--output-format", "json", "--task", "describe logo.webp"), home=monkey_home
        )
        assert run.returncode == 0, run.stderr
        blocks = [
            b
            for m in fake.requests[1]["body"]["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
    (result,) = blocks
    text, image = result["content"]
    assert text["text"].startswith("logo.webp: WebP image, ") and text["text"].endswith("64×32")
    assert image["source"]["media_type"] == "image/webp"
    assert base64.b64decode(image["source"]["data"]) == images.webp_vp8x(64, 32)


def test_an_openai_compatible_server_gets_image_parts_unless_it_reads_only_text(
    workspace: Path, monkey_home: Path
) -> None:
    (workspace / "shot.png").write_bytes(SHOT)
    args = ["agent", "--backend", "openai", "--api-key", "k", "--model", "m", "--cwd", str(workspace)]
    replies = [Reply(tool_calls=[("call_1", "file_read", {"path": "shot.png"})]), Reply(text="seen")]
    with FakeOpenAI(replies) as fake:
        run = invoke([*args, "--base-url", fake.url, "--task", "what is @shot.png"], home=monkey_home)
        assert run.returncode == 0, run.stderr
        first, second = fake.requests[0]["messages"], fake.requests[1]["messages"]
    user = [m for m in first if m["role"] == "user"][0]
    assert user["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
    roles = [m["role"] for m in second]
    tool_at = roles.index("tool")
    assert roles[tool_at + 1] == "user"  # a tool message takes only text: its image follows in a user message
    assert second[tool_at + 1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{B64}"

    (monkey_home / "config.toml").write_text("[openai]\nimages = false\n")
    with FakeOpenAI([Reply(text="text only")]) as fake:
        run = invoke([*args, "--base-url", fake.url, "--task", "what is @shot.png"], home=monkey_home)
        assert run.returncode == 0, run.stderr
        sent = json.dumps(fake.requests[0])
    assert "the image was not sent: the openai backend takes only text" in run.stderr
    assert B64 not in sent and "base64" not in sent


def test_a_backend_that_takes_only_text_says_so(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (workspace / "shot.png").write_bytes(SHOT)
    script = write_script(tmp_path / "s.json", [{"text": "I cannot see"}])
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            "what is @shot.png",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    assert "the image was not sent: the scripted backend takes only text" in run.stderr
    started = [json.loads(line) for line in run.stdout.splitlines() if '"turn_started"' in line]
    assert started[0].get("images", []) == []
    image = ToolImage(media_type="image/png", data=B64)  # a stored image, resumed on the local model
    request = ModelRequest(system="", messages=[Message(role="user", content="look", images=[image])])
    (said,) = [m["content"] for m in chat_messages(request) if m["role"] == "user"]
    assert said == images_note(request.messages[0], "the local model reads only text")
    assert "the image attached to this message not passed on: the local model reads only text" in said
    assert B64 not in said


async def test_an_editors_image_block_goes_with_the_message_and_a_bad_one_is_named(
    workspace: Path, monkey_home: Path
) -> None:
    from acp import PROTOCOL_VERSION, image_block, text_block

    from tests.support.acp import start_monkey, text_of

    gif = base64.b64encode(images.gif(8, 8)).decode()
    with FakeAnthropic() as fake:
        fake.add(Stream(reply_events("an 8 by 8 gif")))
        async with start_monkey(monkey_home, "--backend", "anthropic", "--base-url", fake.url, "--api-key", "k") as (
            conn,
            client,
            _,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            reply = await conn.prompt(
                session_id=session.session_id,
                prompt=[
                    text_block("what are these?"),
                    image_block(gif, "image/gif"),
                    image_block("%%%", "image/png"),
                    image_block(base64.b64encode(b"BM not a png").decode(), "image/png"),
                ],
            )
        assert reply.stop_reason == "end_turn"
        (image,) = _images(fake.requests[0]["body"]["messages"][0]["content"])
    assert image["source"] == {"type": "base64", "media_type": "image/gif", "data": gif}
    said = text_of(client.updates)
    assert "an image (image/png) was left out: its data is not base64" in said
    assert "an image (image/png) was left out: not a PNG, JPEG, GIF or WebP image" in said
    assert "an 8 by 8 gif" in said
