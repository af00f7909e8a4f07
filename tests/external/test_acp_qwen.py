"""The real Qwen Code (``qwen --acp``, pinned in tests/npm) as ``--backend acp:qwen`` against a fake
OpenAI-compatible model API on 127.0.0.1: its session is switched off its ``auto`` mode at start (so it
asks), a write it asks for is decided by monkey's rules, checkpointed and undone with ``monkey undo``,
refused headless, refused by a deny rule on the path; its own shell command is decided as a shell line
and what it changed is undone with the turn; a turn cancelled while its question waits and a crash of
the agent mid-turn leave no process behind."""

from __future__ import annotations

import asyncio
import json
import dataclasses
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from monkey.agent.loop import Agent
from monkey.backends.acp_client.agents import BUILT_IN
from monkey.permissions.policy import ApprovalPolicy
from tests.support.cli import invoke
from tests.support.external import configure_acp_agent, qwen_cli, run_task, Waits
from tests.support.fakes.openai_server import FakeOpenAI, Reply

if TYPE_CHECKING:  # the backend imports the acp SDK (seconds): when a test builds one, not at collection
    from monkey.backends.acp_client.backend import AcpBackend

pytestmark = pytest.mark.external


def _env(api: FakeOpenAI, home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return {"OPENAI_BASE_URL": api.url, "OPENAI_API_KEY": "sk-fake", "OPENAI_MODEL": "fake-model", "HOME": str(home)}


def _write(workspace: Path, name: str = "hello.txt") -> list[Reply]:
    return [
        Reply(tool_calls=[("c1", "write_file", {"file_path": str(workspace / name), "content": "hello\n"})]),
        Reply(text="done"),
    ]


def test_a_write_is_asked_allowed_checkpointed_and_undone(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    qwen = qwen_cli()
    with FakeOpenAI(_write(workspace.resolve())) as api:
        configure_acp_agent(monkey_home, "qwen", qwen, _env(api, tmp_path / "qhome"), allow=("file_write",))
        run = run_task(monkey_home, workspace, "acp:qwen", "create hello.txt", timeout=180, process=True)
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hello\n"
    (resolved,) = run.of_type("approval_resolved")
    assert resolved["name"] == "file_write" and resolved["decision"] == "approved" and resolved["by"] == "rule"
    assert len(run.of_type("checkpoint_created")) >= 2  # the turn's and the write's own
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "hello.txt").exists()


def test_a_write_is_refused_headless_and_by_a_deny_rule(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    """Qwen Code starts its session in ``auto`` (it writes without asking): monkey sets ``default``, so it asks."""
    qwen = qwen_cli()
    for allow, deny, why in (
        ((), (), "no terminal to ask on"),
        (("file_write",), ("file_write(hello.txt)",), "denied by rule file_write(hello.txt)"),
    ):
        with FakeOpenAI(_write(workspace.resolve())) as api:
            configure_acp_agent(monkey_home, "qwen", qwen, _env(api, tmp_path / "qhome"), allow=allow, deny=deny)
            run = run_task(monkey_home, workspace, "acp:qwen", "create hello.txt", timeout=180, process=True)
        assert run.returncode == 0, run.stderr
        (resolved,) = run.of_type("approval_resolved")
        assert resolved["decision"] == "denied" and why in resolved["reason"], resolved
        assert not (workspace / "hello.txt").exists()


def test_its_own_shell_command_is_decided_and_undone_on_its_own(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    qwen = qwen_cli()
    replies = [Reply(tool_calls=[("c1", "run_shell_command", {"command": "touch made.txt"})]), Reply(text="done")]
    with FakeOpenAI(replies) as api:
        configure_acp_agent(monkey_home, "qwen", qwen, _env(api, tmp_path / "qhome"), allow=("shell_execute(touch *)",))
        run = run_task(monkey_home, workspace, "acp:qwen", "make a file", timeout=180, process=True)
    assert run.returncode == 0, run.stderr
    (resolved,) = run.of_type("approval_resolved")
    assert resolved["name"] == "shell_execute" and resolved["decision"] == "approved", resolved
    assert (workspace / "made.txt").exists()
    # offered terminals (initialize says terminal: true), Qwen Code still runs the command itself
    assert not [e for e in run.events if str(e.get("call_id", "")).startswith("acp-term-")]
    # its usage comes in an update's _meta.usage, once per model call (the fake API's 11 in, 5 out)
    assert [(u["input_tokens"], u["output_tokens"]) for u in run.of_type("usage")] == [(11, 5), (11, 5)]
    # the command is a checkpoint of its own (opened when allowed), and undo reverts exactly it
    made = run.of_type("checkpoint_created")
    (own,) = [c for c in made if c["call_id"] == resolved["call_id"]]
    (turn,) = [c for c in made if c["call_id"].startswith("run")]
    undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert own["checkpoint_id"] in undo.stdout and turn["checkpoint_id"] not in undo.stdout, undo.stdout
    assert not (workspace / "made.txt").exists()


def _backend(qwen: str, api: FakeOpenAI, workspace: Path, home: Path) -> AcpBackend:
    from monkey.backends.acp_client.backend import AcpBackend

    entry = dataclasses.replace(BUILT_IN["qwen"], command=qwen, env=_env(api, home))
    return AcpBackend(entry, qwen, workspace=workspace, base_env={"PATH": os.environ["PATH"]}, grace=1.0)


def _group_alive(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    alive = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(name))
    return alive


def test_cancel_while_its_question_waits_leaves_no_process(workspace: Path, tmp_path: Path) -> None:
    qwen = qwen_cli()
    with FakeOpenAI(_write(workspace.resolve())) as api:
        backend = _backend(qwen, api, workspace, tmp_path / "qhome")
        approver = Waits()
        agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())

        async def drive() -> tuple[list, int]:
            events = []

            async def cancel() -> None:
                await approver.asked.wait()
                agent.cancel()

            canceller = asyncio.create_task(cancel())
            async for event in agent.run("create hello.txt"):
                events.append(event)
            await canceller
            assert backend.proc is not None and backend.proc._proc is not None  # noqa: SLF001
            pid = backend.proc._proc.pid  # noqa: SLF001
            await backend.aclose()  # the session's end
            return events, pid

        events, pid = asyncio.run(asyncio.wait_for(drive(), 180))
    assert events[-1].type == "turn_completed" and events[-1].reason == "cancelled"
    assert backend.client is not None and backend.client.answers == ["cancelled"]
    assert not (workspace / "hello.txt").exists()
    assert _group_alive(pid) == []


def test_a_crash_mid_turn_ends_it_with_the_reason(workspace: Path, tmp_path: Path) -> None:
    qwen = qwen_cli()
    with FakeOpenAI(_write(workspace.resolve())) as api:
        backend = _backend(qwen, api, workspace, tmp_path / "qhome")
        approver = Waits()
        agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())

        async def drive() -> list:
            events = []

            async def kill() -> None:
                await approver.asked.wait()
                assert backend.proc is not None and backend.proc._proc is not None  # noqa: SLF001
                os.killpg(backend.proc._proc.pid, signal.SIGKILL)  # noqa: SLF001

            killer = asyncio.create_task(kill())
            async for event in agent.run("create hello.txt"):
                events.append(event)
            await killer
            await backend.aclose()
            return events

        events = asyncio.run(asyncio.wait_for(drive(), 180))
    errors = [e for e in events if e.type == "error"]
    assert errors and "killed by signal 9" in errors[0].message, events
    assert events[-1].type == "turn_completed" and events[-1].reason == "error"


@pytest.mark.timeout(400)  # two or three runs of monkey and the agent, each a process
def test_continue_loads_its_own_session(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    """Qwen Code says ``loadSession``: ``--continue`` loads its stored session (the earlier prompt reaches
    the model without monkey sending it as text) and what it replays is not stored again."""
    qwen = qwen_cli()
    qhome = tmp_path / "qhome"
    with FakeOpenAI([Reply(text="the first answer")]) as api:
        configure_acp_agent(monkey_home, "qwen", qwen, _env(api, qhome))
        first = run_task(monkey_home, workspace, "acp:qwen", "remember the word pineapple", timeout=180, process=True)
    assert first.returncode == 0, first.stderr
    with FakeOpenAI([Reply(text="the second answer")]) as api:
        configure_acp_agent(monkey_home, "qwen", qwen, _env(api, qhome))
        again = run_task(monkey_home, workspace, "acp:qwen", "which word", "--continue", timeout=180, process=True)
        asked = [json.dumps(r) for r in api.requests]
    assert again.returncode == 0, again.stderr
    assert asked and "pineapple" in asked[-1] and "The conversation so far" not in asked[-1]
    shown = "".join(e["text"] for e in again.of_type("text_delta"))
    assert "the second answer" in shown and "the first answer" not in shown
