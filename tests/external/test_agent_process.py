"""Supervising a real fake ``claude``/``codex`` process: replay, watchdog, SIGTERM-proof, crash, floods."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from monkey.backends.base import BackendError
from monkey.backends.codex.backend import CodexBackend
from monkey.events import Event
from tests.support.external import backend_events, claude, FIXTURES, request

pytestmark = pytest.mark.subprocess


def log(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_replay_scrubbed_env_and_resume(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(
        fake_agent,
        tmp_path,
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"},
        append_system_prompt="be brief",
        max_turns=3,
        mcp_config="mcp.json",
    )
    events = asyncio.run(backend_events(backend))
    assert [e.type for e in events][-2:] == ["usage", "message_completed"]
    assert events[-1].text == "Hello from the fake server." and events[-1].tool_calls == []
    assert all(e.session_id == "s_test" for e in events)
    assert backend.agent_session_id == "8f0c2a51-3d7e-4c1b-9a55-2f4e1d0b7c63"
    assert backend.model == "claude-sonnet-4-5-20250929"
    first = log(tmp_path)[0]
    assert first["stdin"] == "say hello" and first["cwd"] == str(tmp_path)
    argv = first["argv"]
    assert argv[:12] == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        "default",
        "--setting-sources",
    ]
    assert argv[12] == ""  # no settings file: the person's Claude Code allow rules do not apply
    assert "--resume" not in argv
    assert argv[argv.index("--append-system-prompt") + 1] == "be brief"
    assert argv[argv.index("--max-turns") + 1] == "3" and "--mcp-config" in argv
    env = first["env"]
    assert "ANTHROPIC_API_KEY" not in env and "CLAUDE_CODE_OAUTH_TOKEN" not in env
    assert not any(k.startswith("OTEL_") for k in env)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"  # set explicitly in config: passed on

    asyncio.run(backend_events(backend, "and again"))
    second = log(tmp_path)[1]["argv"]
    assert second[second.index("--resume") + 1] == "8f0c2a51-3d7e-4c1b-9a55-2f4e1d0b7c63"


def test_idle_watchdog_stops_a_silent_child(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "silent", idle_timeout=0.5, grace=0.5)
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        asyncio.run(backend_events(backend))
    assert info.value.kind == "timeout" and "printed nothing for 0.5 s" in info.value.message
    assert time.monotonic() - started < 60  # stopped, not waited for (the child sleeps an hour)
    assert not alive(log(tmp_path)[0]["pid"])
    assert backend.last is not None and backend.last.stopped == "idle"


def test_a_child_ignoring_sigterm_is_killed(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "ignore_term", idle_timeout=0.5, grace=0.5)
    started = time.monotonic()
    with pytest.raises(BackendError):
        asyncio.run(backend_events(backend))
    assert time.monotonic() - started < 60  # killed, not waited for (the child sleeps an hour)
    assert backend.last is not None and backend.last.returncode == -9
    assert not alive(log(tmp_path)[0]["pid"])


def test_wall_clock_cap(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "silent", idle_timeout=30, wall_timeout=0.5, grace=0.5)
    with pytest.raises(BackendError, match="ran longer than 0.5 s"):
        asyncio.run(backend_events(backend))


def test_crash_without_result(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "crash", fixture="tool_write")
    got: list[Event] = []

    async def run() -> None:
        async for e in backend.stream(request()):
            got.append(e)

    with pytest.raises(BackendError) as info:
        asyncio.run(run())
    msg = info.value.message
    assert "without a result" in msg and "exited with status 3" in msg and "crashed on purpose" in msg
    assert not [e for e in got if e.type == "message_completed"]
    assert [e.type for e in got][0] == "agent_session"  # what it did before the crash is kept


def test_stderr_flood_does_not_block(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "flood", fixture="tool_write")
    events = asyncio.run(backend_events(backend))
    assert events[-1].type == "message_completed"
    assert backend.last is not None and backend.last.stderr_bytes > 5_000_000
    assert len(backend.last.stderr) < 70_000


def test_api_error_result(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, fixture="api_error")
    with pytest.raises(BackendError, match="api_error") as info:
        asyncio.run(backend_events(backend))
    assert info.value.kind == "agent_error"


def test_version_outside_the_supported_range_is_refused(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, env={"FAKE_VERSION": "0.2.9 (Claude Code)"})
    with pytest.raises(BackendError, match=r"Claude Code 0\.2\.9 is not supported"):
        asyncio.run(backend_events(backend))
    assert not (tmp_path / "log.jsonl").exists()  # refused before running anything


def test_missing_executable(tmp_path: Path) -> None:
    backend = claude(tmp_path / "no-such-claude", tmp_path)
    with pytest.raises(BackendError, match="is it installed"):
        asyncio.run(backend_events(backend))


def test_cancel_kills_the_child(fake_agent: Path, tmp_path: Path) -> None:
    backend = claude(fake_agent, tmp_path, "ignore_term", idle_timeout=60, grace=0.3)

    async def run() -> None:
        stream = backend.stream(request())
        task = asyncio.ensure_future(stream.__anext__())
        await task  # the init line arrived: the child is running
        nxt = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.2)
        nxt.cancel()
        with pytest.raises(asyncio.CancelledError):
            await nxt
        await stream.aclose()

    asyncio.run(run())
    assert not alive(log(tmp_path)[0]["pid"])
    assert backend.last is not None and backend.last.stopped == "cancelled"


def test_codex_backend_replays_and_resumes(fake_agent: Path, tmp_path: Path) -> None:
    env = {
        "FAKE_REPLAY": str(FIXTURES / "codex" / "app_text.jsonl"),
        "FAKE_LOG": str(tmp_path / "log.jsonl"),
        "FAKE_VERSION": "codex-cli 0.169.0",
    }
    backend = CodexBackend(
        executable=str(fake_agent.with_name("codex")),
        model="gpt-5.5",
        workspace=tmp_path,
        env=env,
        base_env={"PATH": os.environ["PATH"], "OPENAI_API_KEY": "x"},
    )
    events = asyncio.run(backend_events(backend, "say hello"))
    assert events[-1].type == "message_completed"
    assert events[-1].text == "Hello from the fake server (user messages: 1)."
    first = log(tmp_path)[0]
    assert first["argv"] == ["app-server"] and "OPENAI_API_KEY" not in first["env"]
    thread = backend.agent_session_id
    backend.explicit_env = {**env, "FAKE_REPLAY": str(FIXTURES / "codex" / "app_resumed.jsonl")}
    events = asyncio.run(backend_events(backend, "say hello again"))
    resume = next(e["rpc"] for e in log(tmp_path) if "rpc" in e and e["rpc"].get("method") == "thread/resume")
    assert resume["params"]["threadId"] == thread and resume["params"]["model"] == "gpt-5.5"
    (usage,) = [e for e in events if e.type == "usage"]  # the earlier turn's usage, told again, is not counted
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (802, 200, 22)


def test_codex_crash_mid_turn(fake_agent: Path, tmp_path: Path) -> None:
    env = {"FAKE_REPLAY": str(FIXTURES / "codex" / "app_shell.jsonl"), "FAKE_MODE": "crash"}
    backend = CodexBackend(
        executable=str(fake_agent.with_name("codex")),
        model=None,
        workspace=tmp_path,
        env=env,
        base_env={"PATH": os.environ["PATH"]},
        check_version=False,
    )
    with pytest.raises(BackendError, match="incomplete") as err:
        asyncio.run(backend_events(backend))
    assert "status 3" in str(err.value) and "crashed on purpose" in str(err.value)
