"""``--continue`` of an ``acp:NAME`` session with the fake ACP agent (real processes, the CLI): an agent
that says ``loadSession`` gets ``session/load`` of its stored session and no conversation as text,
and what it replays is not stored again; an agent that does not (or no longer has the session) gets a
new session with the conversation so far as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_agents import fake_acp_exe, got
from tests.support.external import run_task

pytestmark = pytest.mark.subprocess


def _configure(home: Path, exe: Path, log: Path, **env: str) -> None:
    (home / "config.toml").write_text(
        f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n[acp_agents.fake.env]\n"
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"FAKE_LOG": str(log), **env}.items())
    )


def _prompts(log: Path) -> list[str]:
    return [
        "".join(b.get("text", "") for b in m["params"]["prompt"])
        for m in got(log)
        if m.get("method") == "session/prompt"
    ]


def _methods(log: Path) -> list[str]:
    return [m["method"] for m in got(log) if "method" in m]


@pytest.mark.timeout(400)  # two or three runs of monkey and the agent, each a process
def test_continue_loads_the_agents_session_and_stores_no_replay(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log, FAKE_LOAD="1")
    first = run_task(monkey_home, workspace, "acp:fake", "text")
    assert first.returncode == 0, first.stderr
    log.unlink()
    again = run_task(monkey_home, workspace, "acp:fake", "text", "--continue")
    assert again.returncode == 0, again.stderr
    sent = got(log)
    assert [m["method"] for m in sent if "method" in m][:2] == ["initialize", "session/load"]
    load = next(m for m in sent if m.get("method") == "session/load")
    assert load["params"]["sessionId"] == "fake-session-1" and load["params"]["cwd"] == str(workspace.resolve())
    assert "session/new" not in _methods(log)
    assert _prompts(log) == ["text"]  # it has the conversation: none of it comes as text
    assert "REPLAYED" not in json.dumps(again.events)  # the replay is not stored or shown again
    assert [e["type"] for e in again.events].count("turn_started") == 1
    assert "hello from the agent" in again.stdout


@pytest.mark.timeout(400)  # two or three runs of monkey and the agent, each a process
def test_continue_without_load_gives_the_conversation_as_text(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    exe = fake_acp_exe(tmp_path / "bin")
    _configure(monkey_home, exe, log)
    assert run_task(monkey_home, workspace, "acp:fake", "text").returncode == 0
    for env in ({}, {"FAKE_LOAD": "1", "FAKE_KNOWN": "another-session"}):  # cannot load; no longer has it
        log.unlink()
        _configure(monkey_home, exe, log, **env)
        again = run_task(monkey_home, workspace, "acp:fake", "text", "--continue")
        assert again.returncode == 0, again.stderr
        assert "session/new" in _methods(log)
        (prompt,) = _prompts(log)
        assert prompt.startswith("The conversation so far") and "assistant: hello from the agent" in prompt
        assert prompt.endswith("text")
        assert "REPLAYED" not in json.dumps(again.events)
