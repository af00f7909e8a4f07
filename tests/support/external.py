"""What the tests of the external-agent backends (Claude Code, Codex) share: monkey's config for
a fake or real agent executable, a headless ``monkey agent --task`` run of one, what the fake
agent logged that monkey answered, a turn cancelled while its approval waits for a person, the
real CLIs (found and configured against the fake APIs) and the backend on the fake ``claude``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.agent.loop import Agent
from monkey.backends.claude_code.backend import ClaudeCodeBackend
from monkey.messages import Message, ModelRequest
from monkey.events import Event
from tests.support.cli import ROOT, Run, invoke, run_monkey
from tests.support.fakes.anthropic_server import FakeAnthropic

FIXTURES = ROOT / "tests" / "fixtures"
"""Recorded sessions of the real agents (``claude_code/``, ``codex/``) that the fakes replay."""

__all__ = [
    "FIXTURES",
    "NPM_BIN",
    "Waits",
    "answers",
    "backend_events",
    "cancel_when_asked",
    "claude",
    "claude_cli",
    "codex_cli",
    "configure",
    "configure_acp_agent",
    "configure_claude",
    "configure_codex",
    "decisions",
    "gemini_cli",
    "npm_cli",
    "plain",
    "prepend_config",
    "qwen_cli",
    "request",
    "run_task",
    "sent",
]


def configure(
    home: Path,
    section: str,
    exe: Path | str,
    *,
    allow: tuple[str, ...] | None = None,
    settings: dict[str, float] | None = None,
    **env: str,
) -> None:
    """monkey's config: the ``[section]`` backend runs ``exe`` with ``env`` added to its environment and
    ``settings`` (such as its timeouts); ``allow``, when given, is the ``[approvals]`` allow rules."""
    lines = ["[approvals]", f"allow = {json.dumps(list(allow))}"] if allow is not None else []
    lines += [f"[{section}]", f"executable = {json.dumps(str(exe))}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in (settings or {}).items()]
    lines += ["[" + section + ".env]"] + [f"{k} = {json.dumps(v)}" for k, v in env.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def prepend_config(home: Path, text: str) -> None:
    """Put ``text`` (tables such as ``[approvals]``) before what monkey's config already says."""
    (home / "config.toml").write_text(text + (home / "config.toml").read_text())


def run_task(
    home: Path, workspace: Path, backend: str, task: str, *extra: str, process: bool = False, timeout: float = 60
) -> Run:
    """``monkey agent --backend BACKEND [EXTRA] --task TASK --output-format stream-json`` in ``workspace``,
    in this process (the agent it runs is a process all the same); ``process=True`` starts ``monkey``
    as a process of its own too (``timeout``: its limit)."""
    args = [
        "agent",
        "--backend",
        backend,
        *extra,
        "--task",
        task,
        "--output-format",
        "stream-json",
        "--cwd",
        str(workspace),
    ]
    return run_monkey(args, home=home, timeout=timeout) if process else invoke(args, home=home)


def answers(log: Path) -> list[dict]:
    """What monkey wrote back on the fake ``claude``'s stdin (its control responses), in order."""
    return [json.loads(line)["answer"] for line in log.read_text().splitlines() if '"answer"' in line]


def sent(log: Path) -> list[dict]:
    """What monkey wrote to the fake Codex app server, in order."""
    return [json.loads(line)["rpc"] for line in log.read_text().splitlines() if line.startswith('{"rpc"')]


def decisions(log: Path) -> list[str]:
    """The decisions monkey sent the fake Codex app server, in order."""
    return [m["result"]["decision"] for m in sent(log) if "result" in m]


class Waits:
    """An approver that never answers (a person who has not decided yet)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def cancel_when_asked(
    agent: Agent,
    approver: Waits,
    task: str,
    *,
    ask_within: float = 60,
    within: float = 120,
    before_cancel: Callable[[], None] | None = None,
) -> list[Event]:
    """Run ``task`` on ``agent`` and cancel the turn once ``approver`` is asked (after calling
    ``before_cancel``); the turn's events. Fails if no question comes within ``ask_within`` seconds
    or the turn does not end within ``within``."""

    async def drive() -> list[Event]:
        events: list[Event] = []

        async def cancel() -> None:
            await asyncio.wait_for(approver.asked.wait(), ask_within)
            if before_cancel is not None:
                before_cancel()
            agent.cancel()

        canceller = asyncio.create_task(cancel())
        async for event in agent.run(task):
            events.append(event)
        await canceller
        return events

    return asyncio.run(asyncio.wait_for(drive(), within))


def _bundled() -> str | None:
    """The CLI the ``claude-agent-sdk`` wheel (the dev extra) ships, the same program as npm's."""
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    exe = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(exe) if exe.is_file() and os.access(exe, os.X_OK) else None


def claude_cli() -> str:
    """The real Claude Code CLI: ``MONKEY_CLAUDE_CLI``, ``claude`` on PATH or the SDK's copy (else the test is skipped)."""
    path = os.environ.get("MONKEY_CLAUDE_CLI") or shutil.which("claude") or _bundled()
    if not path:
        pytest.skip(
            "the Claude Code CLI is not installed (npm install @anthropic-ai/claude-code; "
            "set MONKEY_CLAUDE_CLI to its `claude`)"
        )
    return path


def configure_claude(
    home: Path, cli: str, server: FakeAnthropic, cli_home: Path, allow: tuple[str, ...] = ("file_write",)
) -> None:
    """monkey's config for the real Claude Code CLI against the fake Anthropic ``server``, with its own home."""
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ANTHROPIC_BASE_URL": server.url,
        "HOME": str(cli_home),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }
    configure(home, "claude_code", cli, allow=allow, settings={"idle_timeout": 60.0, "timeout": 120.0}, **env)


NPM_BIN = ROOT / "tests" / "npm" / "node_modules" / ".bin"
"""The pinned CLIs the README's test command installs (``npm install --prefix tests/npm``)."""


def npm_cli(name: str, env_var: str, what: str) -> str:
    """The real CLI ``name``: the program ``env_var`` names, or the pinned npm copy (else the test is skipped)."""
    path = os.environ.get(env_var) or (str(NPM_BIN / name) if (NPM_BIN / name).exists() else "")
    if not path:
        pytest.skip(f"{what} is not installed (npm install --prefix tests/npm, or set {env_var} to its `{name}`)")
    return path


def codex_cli() -> str:
    """The real Codex CLI: ``MONKEY_CODEX_CLI`` or the pinned npm copy (else the test is skipped)."""
    return npm_cli("codex", "MONKEY_CODEX_CLI", "the Codex CLI")


def gemini_cli() -> str:
    """The real Gemini CLI (``MONKEY_GEMINI_CLI`` or the pinned npm copy)."""
    return npm_cli("gemini", "MONKEY_GEMINI_CLI", "Gemini CLI")


def qwen_cli() -> str:
    """The real Qwen Code CLI (``MONKEY_QWEN_CLI`` or the pinned npm copy)."""
    return npm_cli("qwen", "MONKEY_QWEN_CLI", "Qwen Code")


def configure_acp_agent(
    home: Path, name: str, command: str, env: dict[str, str], *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> None:
    """monkey's config: the ``acp:NAME`` agent runs ``command`` with ``env``; ``allow``/``deny`` are the
    ``[approvals]`` rules."""
    (home / "config.toml").write_text(
        f"[approvals]\nallow = {json.dumps(list(allow))}\ndeny = {json.dumps(list(deny))}\n"
        f"[acp_agents.{name}]\ncommand = {json.dumps(command)}\n[acp_agents.{name}.env]\n"
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
    )


def configure_codex(home: Path, cli: str, codex_home: Path, allow: tuple[str, ...] = ("shell_execute",)) -> None:
    """monkey's config for the real Codex CLI with ``codex_home`` as its CODEX_HOME."""
    # Codex runs its shell tool in its sandbox through a helper (``codex-linux-sandbox``, a link to itself
    # it puts under CODEX_HOME and on PATH), and refuses to create that helper inside the temp folder;
    # this CODEX_HOME lies in pytest's temp folder, so the CLI gets a temp folder of its own (as a
    # person's ~/.codex is not in theirs). Without it every command failed with "bwrap: execvp
    # codex-linux-sandbox: No such file or directory" and hello.txt was never written.
    tmp = codex_home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {
        "CODEX_HOME": str(codex_home),
        "HOME": str(codex_home.parent),
        "FAKE_OPENAI_KEY": "sk-fake",
        "TMPDIR": str(tmp),
    }
    configure(home, "codex", cli, allow=allow, settings={"idle_timeout": 60.0, "timeout": 120.0}, **env)


def plain(events: list[Event]) -> list[tuple[str, dict]]:
    """Events without their timestamps, comparable across runs."""
    out = []
    for e in events:
        d = msgspec.structs.asdict(e)
        d.pop("ts")
        out.append((e.type, d))
    return out


def request(prompt: str = "say hello") -> ModelRequest:
    """A model request of one user message."""
    return ModelRequest(system="ignored", messages=[Message(role="user", content=prompt)], session_id="s_test")


def claude(exe: Path, tmp_path: Path, mode: str = "replay", fixture: str = "text", **kw) -> ClaudeCodeBackend:
    """The Claude Code backend on the fake ``claude`` at ``exe`` replaying ``fixture`` in ``mode``."""
    env = {
        "FAKE_MODE": mode,
        "FAKE_REPLAY": str(FIXTURES / "claude_code" / f"{fixture}.jsonl"),
        "FAKE_LOG": str(tmp_path / "log.jsonl"),
    }
    env.update(kw.pop("env", {}))
    base = {
        "PATH": os.environ["PATH"],
        "ANTHROPIC_API_KEY": "sk-ambient",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x",
        "CLAUDE_CODE_OAUTH_TOKEN": "ambient",
        "ANTHROPIC_BASE_URL": "http://ambient",
        "LANG": "C.UTF-8",
    }
    return ClaudeCodeBackend(executable=str(exe), model=None, workspace=tmp_path, env=env, base_env=base, **kw)


async def backend_events(backend, prompt: str = "say hello") -> list[Event]:
    """Every event of one streamed turn of ``backend``."""
    return [e async for e in backend.stream(request(prompt))]
