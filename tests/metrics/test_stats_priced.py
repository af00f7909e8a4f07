"""A priced backend's usage (the real Anthropic SDK against a fake server on 127.0.0.1): tokens,
the prompt cache and dollars in ``monkey stats --json``, by model and by backend."""

from __future__ import annotations

import json
from pathlib import Path

from monkey.cli import main
from monkey.store.tally import micros
from tests.support.fakes.anthropic_server import FakeAnthropic, Stream, reply_events

MODEL = "claude-sonnet-4-5-20250929"


def test_a_priced_backends_tokens_cache_and_cost(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (workspace / "notes.txt").write_text("hello\n")
    with FakeAnthropic() as fake:
        fake.add(
            Stream(
                reply_events(
                    tool_calls=[("c1", "file_read", {"path": "notes.txt"})],
                    model=MODEL,
                    input_tokens=200,
                    output_tokens=30,
                    cache_write=1000,
                )
            ),
            Stream(reply_events("It says hello.", model=MODEL, input_tokens=50, output_tokens=20, cache_read=1000)),
        )
        code = main(
            [
                "agent",
                "--backend",
                "anthropic",
                "--model",
                MODEL,
                "--base-url",
                fake.url,
                "--api-key",
                "k",
                "--cwd",
                str(workspace),
                "--output-format",
                "stream-json",
                "--no-approval",
                "--task",
                "read it",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0, out[-1500:]
    usage = [json.loads(line) for line in out.splitlines() if '"type":"usage"' in line]
    assert len(usage) == 2 and all(u["cost_usd"] > 0 for u in usage)

    assert main(["stats", "--json", "--cwd", str(workspace), "--by", "model"]) == 0
    got = json.loads(capsys.readouterr().out)
    t = got["totals"]
    assert t["tokens"] == {"input": 250, "output": 50, "cache_read": 1000, "cache_creation": 1000}
    assert t["cache_hit_ratio"] == round(1000 / 2250, 4)
    assert t["cost_micros"] == sum(micros(u["cost_usd"]) for u in usage) > 0
    assert t["model_calls"] == 2 and t["tools"]["ok"] == 1
    assert [(g["key"], g["cost_micros"]) for g in got["groups"]] == [(MODEL, t["cost_micros"])]
    assert main(["stats", "--json", "--cwd", str(workspace), "--by", "backend"]) == 0
    assert [g["key"] for g in json.loads(capsys.readouterr().out)["groups"]] == ["anthropic"]
