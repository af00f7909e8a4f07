"""``/model`` and ``/backend``: switching mid-session keeps the conversation, a failed switch
changes nothing, and the listing says what each backend needs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from monkey.agent.loop import Agent
from monkey.session.switch import BackendSwitcher, switch_command
from monkey.config import ClaudeCodeConfig, Config
from monkey.events import BackendChanged, Event, Usage


def _switcher(tmp_path: Path, workspace: Path, turns: list[dict], **kw) -> BackendSwitcher:  # type: ignore[type-arg]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    kw.setdefault("config", Config())
    return BackendSwitcher(workspace=workspace, script=str(script), flagged="scripted", env={}, **kw)


async def _turn(agent: Agent, prompt: str) -> list[Event]:
    if not agent.started:
        agent.session_started()
    return [event async for event in agent.run(prompt)]


async def test_model_switch_keeps_the_conversation(tmp_path: Path, workspace: Path) -> None:
    switcher = _switcher(tmp_path, workspace, [{"text": "first answer"}, {"text": "second answer"}])
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    await _turn(agent, "one?")
    old = agent.backend

    result = await switch_command(agent, switcher, "/model", "bigger-model")

    assert result.ok
    assert result.event == BackendChanged(
        ts=result.event.ts,
        session_id=agent.session_id,
        from_backend="scripted",
        from_model="scripted",
        to_backend="scripted",
        to_model="bigger-model",
    )
    assert agent.backend is not old and agent.backend.model == "bigger-model"
    assert "bigger-model" in agent.system_prompt
    assert agent.context is None or agent.context.backend is agent.backend
    # The new backend replays its script from the start, and gets the whole conversation.
    events = await _turn(agent, "two?")
    assert [m.content for m in agent.messages] == ["one?", "first answer", "two?", "first answer"]
    usage = [e for e in events if isinstance(e, Usage)][-1]
    assert usage.model == "bigger-model"


async def test_context_manager_follows_the_new_backend(tmp_path: Path, workspace: Path) -> None:
    from monkey.context.window import ContextManager, ContextSettings

    switcher = _switcher(tmp_path, workspace, [{"text": "hi"}])
    backend = switcher.create("scripted", None)
    settings = ContextSettings(window=5000, compact_at=0.5)
    agent = Agent(backend=backend, workspace=workspace, context=ContextManager(backend, settings=settings))
    agent.context.summaries.add("an earlier summary")  # type: ignore[union-attr]

    await switch_command(agent, switcher, "/backend", "scripted other")

    assert agent.context is not None and agent.context.backend is agent.backend
    assert agent.context.settings is settings
    assert agent.context.summaries == {"an earlier summary"}


@pytest.mark.parametrize(
    ("command", "rest", "says"),
    [
        ("/backend", "nope", "unknown backend 'nope'"),
        ("/backend", "anthropic", "cannot switch to anthropic: no Anthropic API key"),
        ("/backend", "scripted a b", "usage: /backend NAME [MODEL]"),
        ("/model", "a b", "usage: /model NAME"),
    ],
)
async def test_a_failed_switch_changes_nothing(
    tmp_path: Path, workspace: Path, command: str, rest: str, says: str
) -> None:
    switcher = _switcher(tmp_path, workspace, [{"text": "hi"}])
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    backend, prompt = agent.backend, agent.system_prompt

    result = await switch_command(agent, switcher, command, rest)

    assert not result.ok and result.event is None
    assert says in result.lines[0]
    assert agent.backend is backend and agent.system_prompt == prompt


async def test_listing_marks_the_current_backend_and_what_each_needs(tmp_path: Path, workspace: Path) -> None:
    switcher = _switcher(
        tmp_path,
        workspace,
        [{"text": "hi"}],
        config=Config(claude_code=ClaudeCodeConfig(executable="no-such-claude-here")),
    )
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)

    result = await switch_command(agent, switcher, "/backend", "")
    shown = "\n".join(result.lines)

    assert result.ok and result.event is None
    assert "* scripted" in shown and "replays --script" in shown
    assert "ANTHROPIC_API_KEY is not set" in shown
    assert "no-such-claude-here is not on PATH" in shown
    for name in ("local", "openai", "codex"):
        assert f"  {name}" in shown
    current = await switch_command(agent, switcher, "/model", "")
    assert current.lines[0] == "model: scripted on scripted"


async def test_switching_to_an_external_agent_says_it_starts_fresh(tmp_path: Path, workspace: Path) -> None:
    exe = tmp_path / "claude"
    exe.write_text(f"#!{sys.executable}\nprint('2.0.14 (Claude Code)')\n")
    exe.chmod(0o755)
    switcher = _switcher(
        tmp_path, workspace, [{"text": "hi"}], config=Config(claude_code=ClaudeCodeConfig(executable=str(exe)))
    )
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    await _turn(agent, "one?")

    result = await switch_command(agent, switcher, "/backend", "claude-code")

    assert result.ok and agent.backend.name == "claude-code"
    assert any("keeps its own conversation" in line for line in result.lines)


async def test_model_names_the_anthropic_api_does_not_know_are_refused(workspace: Path) -> None:
    from tests.support.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic() as server:
        switcher = BackendSwitcher(
            Config(), workspace, flagged="anthropic", api_key="sk-test", base_url=server.url, env={}
        )
        agent = Agent(backend=switcher.create("anthropic", None), workspace=workspace)
        refused = await switch_command(agent, switcher, "/model", "claude-sonnet-9-typo")
        assert not refused.ok and refused.event is None
        assert refused.lines == [
            "cannot switch to claude-sonnet-9-typo: the Anthropic API has no model "
            "'claude-sonnet-9-typo'; still using anthropic · claude-sonnet-4-6"
        ]
        assert agent.backend.model == "claude-sonnet-4-6"
        switched = await switch_command(agent, switcher, "/model", "claude-opus-4-5")
        assert switched.ok and agent.backend.model == "claude-opus-4-5"
        assert switched.lines == ["now using anthropic · claude-opus-4-5"]
        assert [r["path"] for r in server.requests] == []  # the checks were GETs: no model call was made
        await agent.backend.aclose()


async def test_a_model_that_cannot_be_checked_is_taken_and_the_person_told(workspace: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    switcher = BackendSwitcher(Config(), workspace, flagged="anthropic", api_key="sk-test", base_url=url, env={})
    agent = Agent(backend=switcher.create("anthropic", None), workspace=workspace)
    result = await switch_command(agent, switcher, "/model", "claude-opus-4-5")
    assert result.ok and agent.backend.model == "claude-opus-4-5"
    assert result.lines[0] == "now using anthropic · claude-opus-4-5"
    assert result.lines[1].startswith("(not checked: ") and "connection" in result.lines[1]
    await agent.backend.aclose()


async def test_the_scripted_backend_says_its_model_is_only_a_label(tmp_path: Path, workspace: Path) -> None:
    switcher = _switcher(tmp_path, workspace, [{"text": "hi"}])
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    result = await switch_command(agent, switcher, "/model", "anything")
    assert result.ok
    assert result.lines == [
        "now using scripted · anything",
        "(the scripted backend replays its script whatever the model is called)",
    ]


async def test_backend_switches_to_an_acp_agent_and_lists_them(tmp_path: Path, workspace: Path) -> None:
    from tests.support.acp_agents import fake_acp_exe

    exe = fake_acp_exe(tmp_path / "bin")
    config = Config(acp_agents={"fake": {"command": str(exe), "env": {"FAKE_LOG": str(tmp_path / "log")}}})
    switcher = _switcher(tmp_path, workspace, [{"text": "hi"}], config=config)
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    listing = await switch_command(agent, switcher, "/backend", "")
    assert any("acp:fake" in line for line in listing.lines) and any("acp:gemini" in line for line in listing.lines)
    unknown = await switch_command(agent, switcher, "/backend", "acp:nosuch")
    assert not unknown.ok and "unknown ACP agent 'nosuch'; known: fake, gemini, opencode, qwen" in " ".join(
        unknown.lines
    )
    result = await switch_command(agent, switcher, "/backend", "acp:fake")
    assert result.ok, result.lines
    assert agent.backend.name == "acp:fake"
    events = await _turn(agent, "text")
    assert "hello from the agent" in [e for e in events if e.type == "turn_completed"][0].result
    await agent.backend.aclose()
