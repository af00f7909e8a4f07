"""The app's approval dialog answers the real Claude Code CLI's own Bash call (Textual Pilot; the
CLI against the fake Anthropic server on 127.0.0.1): the dialog shows the command, ``y`` lets the
CLI run it, ``n`` + a reason refuses it and the CLI goes on without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.cli import build_parser
from monkey.commands.flags import session_request
from monkey.session.setup import resolve_setup
from monkey.ui.app import MonkeyApp
from monkey.ui.approver import TuiApprover
from tests.support.fakes.anthropic_server import FakeAnthropic
from tests.support.app import approval_turn
from tests.support.external import claude_cli, configure_claude

pytestmark = pytest.mark.external


def _app(workspace: Path) -> MonkeyApp:
    args = build_parser().parse_args(["agent", "--backend", "claude-code", "--cwd", str(workspace)])
    setup = resolve_setup(session_request(args), TuiApprover())
    return MonkeyApp(setup, notices=setup.notices, clock=lambda: 0.0, approval_guard=0.0)


async def test_the_dialog_answers_claude_codes_bash_call(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    cli = claude_cli()
    cli_home = tmp_path / "cli-home"
    cli_home.mkdir()
    with FakeAnthropic(str(workspace)) as server:
        configure_claude(monkey_home, cli, server, cli_home, allow=())

        app = _app(workspace)
        screen = await approval_turn(app, ("y",), "please run the command")
        assert screen.request.tool == "shell_execute"
        assert screen.request.summary == "echo from-bash > bash.txt"
        backend = app.agent.backend
        answer = json.loads(backend.answered[-1])["response"]["response"]
        assert answer["behavior"] == "allow" and answer["updatedInput"]["command"] == "echo from-bash > bash.txt"
        assert (workspace / "bash.txt").read_text() == "from-bash\n"  # the CLI ran it once monkey said yes

        (workspace / "bash.txt").unlink()
        app = _app(workspace)
        await approval_turn(app, ("n", *"not now", "enter"), "please run the command")
        answer = json.loads(app.agent.backend.answered[-1])["response"]["response"]
        assert answer["behavior"] == "deny" and "the user said: not now" in answer["message"]
        assert not (workspace / "bash.txt").exists()
        last = server.main_requests()[-1]["body"]["messages"][-1]["content"]  # the CLI went on without it
        assert any(b.get("type") == "tool_result" and b.get("is_error") for b in last)
