"""A message of a million characters or more through the OpenAI-compatible backend and an agent
plugin, against the fake server on 127.0.0.1: counted in pieces (the BPE encoder refuses such
a text), sent whole, stored whole, and no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.context.tokens import BpeCounter
from tests.support.plugins import configure_openai_compat
from tests.support.cli import invoke
from tests.support.fakes.openai_server import FakeOpenAI, Reply

LONG = "word " * 200_001 + "end"
"""1,000,008 characters: over the encoder's limit of a million."""


def test_a_long_text_is_counted_as_its_pieces_add_up() -> None:
    counter = BpeCounter("o200k_base")
    assert 200_001 <= counter.count_tokens(LONG) <= 200_004, "each ' word' one token, every piece counted"
    assert counter.count_tokens("x" * 1_200_000) > 0, "a text with no place to cut is cut anywhere"


@pytest.mark.parametrize("backend", ["openai", "plugin:openai-compat"])
def test_a_million_character_message_is_sent_and_stored(backend: str, workspace: Path, monkey_home: Path) -> None:
    with FakeOpenAI([Reply(text="Read it all.")]) as server:
        flags = ["--base-url", server.url] if backend == "openai" else []
        configure_openai_compat(monkey_home, server.url)
        run = invoke(
            ["agent", "--backend", backend, *flags, "--cwd", str(workspace), "--plain"],
            home=monkey_home,
            input=LONG + "\n",
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "Input too long" not in run.stderr, run.stderr[-3000:]
    assert "Read it all." in run.stdout
    [request] = server.requests
    assert request["messages"][-1]["content"].strip() == LONG, "the model got the whole message"
    [session] = json.loads(invoke(["sessions", "list", "--json"], home=monkey_home, cwd=workspace).stdout)
    export = invoke(["sessions", "export", session["id"]], home=monkey_home)
    [turn] = [json.loads(line) for line in export.stdout.splitlines() if '"turn_started"' in line]
    assert turn["prompt"].strip() == LONG, "the message is stored whole"
