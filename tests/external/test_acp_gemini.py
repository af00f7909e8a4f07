"""The real Gemini CLI (``gemini --acp``, pinned in tests/npm) as ``--backend acp:gemini`` against a
fake Gemini API on 127.0.0.1 (``GOOGLE_GEMINI_BASE_URL``, ``streamGenerateContent`` as server-sent
events): a write it asks for is decided by monkey's rules, written through ``fs/write_text_file``,
checkpointed and undone with ``monkey undo``; refused headless; a missing file must be answered with
empty content (the spec's "not found" makes it fail every new file); its own shell command is decided
as a shell line and undone with the turn."""

from __future__ import annotations

import asyncio
import json
import dataclasses
import os
from pathlib import Path

import pytest

from monkey.agent.loop import Agent
from monkey.backends.acp_client.agents import BUILT_IN
from monkey.events import ToolResult
from monkey.permissions.policy import ApprovalPolicy
from tests.support.cli import invoke
from tests.support.external import configure_acp_agent, gemini_cli, run_task
from tests.support.fakes.gemini_server import FakeGemini, GeminiReply

pytestmark = pytest.mark.external


def _env(api: FakeGemini, home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return {"GOOGLE_GEMINI_BASE_URL": api.url, "GEMINI_API_KEY": "fake-key", "HOME": str(home)}


def _write(workspace: Path) -> list[GeminiReply]:
    return [
        GeminiReply(call=("write_file", {"file_path": str(workspace / "hello.txt"), "content": "hello\n"})),
        GeminiReply(text="done"),
    ]


def test_a_write_is_asked_allowed_written_through_monkey_and_undone(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    gemini = gemini_cli()
    with FakeGemini(_write(workspace.resolve())) as api:
        configure_acp_agent(monkey_home, "gemini", gemini, _env(api, tmp_path / "ghome"), allow=("file_write",))
        run = run_task(monkey_home, workspace, "acp:gemini", "create hello.txt", timeout=180, process=True)
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hello\n"
    (resolved,) = run.of_type("approval_resolved")
    assert resolved["name"] == "file_write" and resolved["by"] == "rule"
    (result,) = run.of_type("tool_result")
    assert result["ok"] and "+hello" in result["diff"]
    assert len(run.of_type("checkpoint_created")) >= 2  # the turn's and the write's own
    assert invoke(["undo", "--cwd", str(workspace)], home=monkey_home).returncode == 0
    assert not (workspace / "hello.txt").exists()


def _turn(
    gemini: str, workspace: Path, home: Path, replies: list[GeminiReply], policy: ApprovalPolicy, **entry: str
) -> list:
    from monkey.backends.acp_client.backend import AcpBackend  # the acp SDK (seconds): not at collection

    with FakeGemini(replies) as api:
        spec = dataclasses.replace(BUILT_IN["gemini"], command=gemini, env=_env(api, home), **entry)
        backend = AcpBackend(spec, gemini, workspace=workspace, base_env={"PATH": os.environ["PATH"]}, grace=1.0)
        agent = Agent(backend=backend, workspace=workspace, policy=policy)

        async def drive() -> list:
            try:
                return [e async for e in agent.run("go")]
            finally:
                await backend.aclose()

        return asyncio.run(asyncio.wait_for(drive(), 180))


def test_refused_headless_and_a_missing_file_answered_as_it_needs(workspace: Path, tmp_path: Path) -> None:
    gemini = gemini_cli()
    ws = workspace.resolve()
    refused = _turn(gemini, ws, tmp_path / "ghome", _write(ws), ApprovalPolicy())
    assert [e.decision for e in refused if e.type == "approval_resolved"] == ["denied"]
    assert not (ws / "hello.txt").exists()
    # answered with the spec's "not found", Gemini CLI fails the write of every new file
    failed = _turn(
        gemini,
        ws,
        tmp_path / "ghome",
        _write(ws),
        ApprovalPolicy.from_strings(allow=["file_write"]),
        missing_file="not_found",
    )
    (result,) = [e for e in failed if isinstance(e, ToolResult)]
    assert not result.ok and "Resource not found" in result.output
    assert not (ws / "hello.txt").exists()


def test_its_own_shell_command_is_decided_as_a_shell_line(workspace: Path, tmp_path: Path) -> None:
    gemini = gemini_cli()
    ws = workspace.resolve()
    replies = [GeminiReply(call=("run_shell_command", {"command": "touch made.txt"})), GeminiReply(text="done")]
    events = _turn(
        gemini, ws, tmp_path / "ghome", replies, ApprovalPolicy.from_strings(allow=["shell_execute(touch *)"])
    )
    (resolved,) = [e for e in events if e.type == "approval_resolved"]
    assert resolved.name == "shell_execute" and resolved.decision == "approved", resolved
    assert (ws / "made.txt").exists()
    # offered terminals (initialize says terminal: true), Gemini CLI still runs the command itself
    assert not [e for e in events if str(getattr(e, "call_id", "")).startswith("acp-term-")]
    # its usage comes in the answer's _meta.quota (per model): two model calls of 10 in, 5 out
    used = [e for e in events if e.type == "usage"]
    assert used and sum(e.input_tokens for e in used) == 20 and sum(e.output_tokens for e in used) == 10, used
    assert all(e.model not in ("", "default") for e in used), used  # the model it names


@pytest.mark.timeout(400)  # two or three runs of monkey and the agent, each a process
def test_continue_loads_its_own_session(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    """Gemini CLI says ``loadSession``: ``--continue`` asks it to load its stored session. Gemini CLI 0.61.0
    often answers that ``session/load`` with "Internal error" here (its session file of the first run);
    then monkey gives the new session the conversation as text. Either way the model sees the earlier turn
    once and nothing the agent replays is stored again."""
    gemini = gemini_cli()
    ghome = tmp_path / "ghome"
    with FakeGemini([GeminiReply(text="the first answer")]) as api:
        configure_acp_agent(monkey_home, "gemini", gemini, _env(api, ghome))
        first = run_task(monkey_home, workspace, "acp:gemini", "remember the word pineapple", timeout=180, process=True)
    assert first.returncode == 0, first.stderr
    with FakeGemini([GeminiReply(text="the second answer")]) as api:
        configure_acp_agent(monkey_home, "gemini", gemini, _env(api, ghome))
        again = run_task(monkey_home, workspace, "acp:gemini", "which word", "--continue", timeout=180, process=True)
        asked = [json.dumps(body) for path, body in api.requests if body and ":streamGenerateContent" in path]
    assert again.returncode == 0, again.stderr
    assert asked and asked[-1].count("pineapple") == 1, "the earlier turn reaches the model once"
    shown = "".join(e["text"] for e in again.of_type("text_delta"))
    assert "the second answer" in shown and "the first answer" not in shown
    assert [e["type"] for e in again.events].count("turn_started") == 1
