"""Usage an ACP agent reports under ``_meta`` (the fake ACP agent sending it as Qwen Code and Gemini CLI
do) becomes monkey's ``usage`` events, counted once, and ``monkey stats`` counts it."""

from __future__ import annotations

import json
from pathlib import Path

from monkey.agent.loop import Agent
from monkey.events import Usage
from monkey.permissions.policy import ApprovalPolicy
from tests.support.acp_agents import acp_backend, fake_acp_exe, run_turns
from tests.support.cli import invoke


def _usage(events: list) -> list[tuple[str, int, int, int]]:
    return [(e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens) for e in events if isinstance(e, Usage)]


def test_usage_in_updates_and_in_the_answers_meta_becomes_usage_events(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy())
    qwen, gemini, spec = run_turns(agent, "usage", "quota", "text")
    assert _usage(qwen) == [("default", 100, 7, 40), ("default", 150, 9, 40)]  # one per model call
    assert _usage(gemini) == [("gemini-a", 200, 15, 0), ("gemini-b", 100, 5, 0)]  # per model, not the total again
    assert _usage(spec) == [("default", 20, 10, 0)]  # the protocol's own field


def test_monkey_stats_counts_it(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    exe = fake_acp_exe(tmp_path / "bin")
    (monkey_home / "config.toml").write_text(f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n")
    for task in ("quota", "usage"):
        run = invoke(["agent", "--backend", "acp:fake", "--task", task, "--cwd", str(workspace)], home=monkey_home)
        assert run.returncode == 0, run.stderr
    stats = invoke(["stats", "--json", "--by", "model", "--cwd", str(workspace)], home=monkey_home)
    assert stats.returncode == 0, stats.stderr
    said = json.loads(stats.stdout)
    rows = {r["key"]: r["tokens"] for r in said["groups"]}
    assert {k: (v["input"], v["output"]) for k, v in rows.items()} == {
        "gemini-a": (200, 15),
        "gemini-b": (100, 5),
        "default": (250, 16),
    }, rows
    assert rows["default"]["cache_read"] == 80
