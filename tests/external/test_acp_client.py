"""The ``acp:NAME`` backend against a fake ACP agent (tests/external/fake_acp_agent.py, a real process
speaking JSON-RPC on stdio): the start of a session, the agent's updates as monkey's events, its
permission requests and file requests through monkey's engine, and the hostile cases."""

from __future__ import annotations

from pathlib import Path

from monkey.agent.loop import Agent
from monkey.events import (
    AgentSession,
    ApprovalRequested,
    MessageCompleted,
    Raw,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResult,
    Usage,
)
from monkey.permissions.policy import ApprovalPolicy
from tests.support.acp_agents import acp_backend, fake_acp_exe, got, run_turns


def test_a_session_starts_in_the_asking_mode_and_streams_typed_events(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    backend = acp_backend(
        fake_acp_exe(tmp_path / "bin"),
        workspace,
        log,
        mode="default",
        auth="key",
        FAKE_MODES="yolo,default",
        FAKE_AUTH="oauth,key",
    )
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy())
    first, second = run_turns(agent, "text", "text")
    sent = got(log)
    methods = [m.get("method") for m in sent if "method" in m]
    assert methods[:4] == ["initialize", "authenticate", "session/new", "session/set_mode"]
    init = sent[0]["params"]
    assert init["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert init["clientCapabilities"]["terminal"] is True  # its commands may run through monkey's pipeline
    assert sent[1]["params"]["methodId"] == "key"
    assert sent[2]["params"]["cwd"] == str(workspace.resolve())
    assert sent[3]["params"] == {"sessionId": "fake-session-1", "modeId": "default"}
    assert methods.count("initialize") == 1 and methods.count("session/prompt") == 2  # one process, two turns
    assert [e.agent_session_id for e in first if isinstance(e, AgentSession)] == ["fake-session-1"]
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "hello from the agent"
    assert [e.text for e in first if isinstance(e, ThinkingDelta)] == ["thinking it over"]
    (plan,) = [e for e in first if isinstance(e, Raw)]
    assert plan.source == "acp:fake:plan" and plan.data["entries"][0]["content"] == "say hello"
    (call,) = [e for e in first if isinstance(e, ToolCallEvent)]
    assert call.name == "read" and call.arguments["paths"] == ["notes.txt"] and not call.dangerous
    assert [r.ok for r in first if isinstance(r, ToolResult)] == [True]
    (usage,) = [e for e in first if isinstance(e, Usage)]
    assert (usage.input_tokens, usage.output_tokens) == (20, 10)
    (done,) = [e for e in first if isinstance(e, MessageCompleted)]
    assert done.text == "hello from the agent" and not done.tool_calls
    assert first[-1].type == "turn_completed" and second[-1].type == "turn_completed"
    assert backend.mode == "default"


def test_a_mode_the_agent_does_not_offer_is_refused(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, log, mode="default", FAKE_MODES="yolo,auto")
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy())
    (events,) = run_turns(agent, "text")
    errors = [e for e in events if e.type == "error"]
    assert errors and "not its asking mode 'default'" in errors[0].message, events
    assert "session/prompt" not in [m.get("method") for m in got(log)]


def test_a_write_asked_is_refused_headless_and_nothing_is_written(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, log)
    agent = Agent(backend=backend, workspace=workspace, policy=ApprovalPolicy())
    (events,) = run_turns(agent, "write hello.txt")
    assert not (workspace / "hello.txt").exists()
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    assert asked.name == "file_write" and asked.arguments["path"] == "hello.txt"
    assert backend.client is None or backend.client.answers == ["reject_once"]
    assert "permission: no" in "".join(e.text for e in events if isinstance(e, TextDelta))
