"""The real Codex CLI (``codex app-server``, npm ``@openai/codex``) against the fake Responses API on
127.0.0.1, its approval requests decided by monkey: the app's dialog (Textual Pilot) answers its
command (``y`` runs it, ``n`` + a reason refuses it and Codex goes on), and a turn cancelled while the
question waits answers Codex ``cancel`` and stops it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.backends.codex.backend import CodexBackend
from monkey.cli import build_parser
from monkey.commands.flags import session_request
from monkey.session.setup import resolve_setup
from monkey.events import ApprovalRequested
from monkey.ui.app import MonkeyApp
from monkey.ui.approver import TuiApprover
from tests.support.fakes.openai_responses import FakeResponses, codex_config
from tests.support.app import approval_turn
from tests.support.external import Waits, cancel_when_asked
from tests.support.external import codex_cli, configure_codex

pytestmark = pytest.mark.external

COMMAND = "printf 'hi there\\n' > hello.txt && echo wrote hello.txt"


def _app(workspace: Path) -> MonkeyApp:
    args = build_parser().parse_args(["agent", "--backend", "codex", "--cwd", str(workspace)])
    setup = resolve_setup(session_request(args), TuiApprover())
    return MonkeyApp(setup, notices=setup.notices, clock=lambda: 0.0, approval_guard=0.0)


def _decision(line: bytes) -> str:
    return str(json.loads(line)["result"]["decision"])


def _with_env(entry: str) -> list[int]:
    """Live processes whose environment holds ``entry`` (the Codex processes of this test)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if entry.encode() in fh.read().split(b"\0"):
                    with open(f"/proc/{name}/stat") as st:
                        if st.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                            found.append(int(name))
        except OSError:
            continue
    return found


def _codex_home(tmp_path: Path, url: str) -> Path:
    codex_home = tmp_path / "cli-home" / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(codex_config(url, model="gpt-5.5"))
    return codex_home


async def test_the_dialog_answers_codexs_command(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    cli = codex_cli()
    with FakeResponses() as server:
        configure_codex(monkey_home, cli, _codex_home(tmp_path, server.url), allow=())

        app = _app(workspace)
        screen = await approval_turn(app, ("y",), "please create hello.txt")
        assert screen.request.tool == "shell_execute" and screen.request.summary == COMMAND
        assert _decision(app.agent.backend.answered[-1]) == "accept"
        assert (workspace / "hello.txt").read_text() == "hi there\n"  # Codex ran it once monkey said yes

        (workspace / "hello.txt").unlink()
        app = _app(workspace)
        await approval_turn(app, ("n", *"not now", "enter"), "please create hello.txt")
        assert _decision(app.agent.backend.answered[-1]) == "decline"
        assert not (workspace / "hello.txt").exists()
        told = json.dumps(server.main_requests()[-1]["body"]["input"])  # Codex went on without it
        assert "rejected" in told or "declined" in told


def test_cancel_while_codex_waits_for_an_answer(workspace: Path, tmp_path: Path) -> None:
    cli = codex_cli()
    with FakeResponses() as server:
        codex_home = _codex_home(tmp_path, server.url)
        (tmp_path / "cli-home" / "tmp").mkdir()
        env = {
            "CODEX_HOME": str(codex_home),
            "HOME": str(codex_home.parent),
            "FAKE_OPENAI_KEY": "sk-fake",
            "TMPDIR": str(tmp_path / "cli-home" / "tmp"),
        }
        backend = CodexBackend(
            executable=cli, model=None, workspace=workspace, env=env, base_env={"PATH": os.environ["PATH"]}, grace=1.0
        )
        approver = Waits()
        agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())
        running: list[int] = []
        events = cancel_when_asked(
            agent,
            approver,
            "please sleep a while",
            ask_within=90,
            within=150,
            before_cancel=lambda: running.extend(_with_env(f"CODEX_HOME={codex_home}")),
        )
        assert len(server.main_requests()) == 1  # it did not go on to ask the model again
    assert any(isinstance(e, ApprovalRequested) for e in events)
    assert events[-1].type == "turn_completed" and events[-1].reason == "cancelled"
    assert _decision(backend.answered[-1]) == "cancel"
    assert backend.last is not None and backend.last.returncode is not None
    assert running and not _with_env(f"CODEX_HOME={codex_home}")  # nothing of Codex is left running
    assert not (workspace / "slept.txt").exists()
