"""The real Claude Code CLI (npm ``@anthropic-ai/claude-code``) driven by ``monkey agent
--backend claude-code``, pointed at a fake Anthropic server on 127.0.0.1: a text answer, a
file written through the CLI's own Write tool (then ``monkey undo`` removes it), a resumed
second turn, and an API error.

The CLI is found in ``MONKEY_CLAUDE_CLI`` (``.ci/run`` installs it from npm there), on PATH,
or as the copy the ``claude-agent-sdk`` wheel bundles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Run, invoke
from tests.support.fakes.anthropic_server import FakeAnthropic
from tests.support.external import claude_cli, configure_claude, run_task

pytestmark = pytest.mark.external


def _agent(home: Path, workspace: Path, task: str, *extra: str) -> Run:
    return run_task(home, workspace, "claude-code", task, *extra, timeout=150, process=True)


@pytest.mark.timeout(600)  # six runs of the real CLI: about 90 s on a loaded 2-core machine
def test_real_claude_code_cli(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    cli = claude_cli()
    cli_home = tmp_path / "cli-home"
    cli_home.mkdir()
    with FakeAnthropic(str(workspace)) as server:
        configure_claude(monkey_home, cli, server, cli_home)

        # a text answer
        run = _agent(monkey_home, workspace, "say hello")
        assert run.returncode == 0, run.stderr
        (done,) = run.of_type("turn_completed")
        assert done["reason"] == "completed"
        assert done["result"].startswith("Hello from the fake server (user messages: 1)")
        (started,) = run.of_type("agent_session")
        assert started["agent"] == "claude-code" and started["agent_session_id"]
        assert "".join(e["text"] for e in run.of_type("text_delta")).startswith("Hello from the fake server")
        assert run.of_type("usage")[0]["cost_usd"] > 0

        # a file written by the CLI's own Write tool, checkpointed, then undone
        run = _agent(monkey_home, workspace, "please create hello.txt")
        assert run.returncode == 0, run.stderr
        assert (workspace / "hello.txt").read_text() == "hi there\n"
        (call,) = run.of_type("tool_call")
        assert call["name"] == "Write" and call["arguments"]["content"] == "hi there\n"
        (result,) = run.of_type("tool_result")
        assert result["ok"] and result["call_id"] == call["call_id"]
        (allowed,) = run.of_type("approval_resolved")  # monkey's engine decided it, by the allow rule
        assert allowed["call_id"] == call["call_id"] and allowed["by"] == "rule" and allowed["decision"] == "approved"
        run_wide, own = run.of_type("checkpoint_created")
        assert run_wide["tool"] == "claude-code"
        assert own["tool"] == "Write" and own["call_id"] == call["call_id"] and own["paths"] == ["hello.txt"]
        listed = invoke(["checkpoints", "--json", "--cwd", str(workspace)], home=monkey_home)
        entries = {e["id"]: e for e in json.loads(listed.stdout)["checkpoints"]}
        # the journal gives the change to the Write call, not to the whole run
        assert entries[own["checkpoint_id"]]["tool"] == "Write"
        assert entries[own["checkpoint_id"]]["state"] == "applied"
        assert entries[own["checkpoint_id"]]["paths"] == ["hello.txt"]
        assert "hello.txt" not in entries[run_wide["checkpoint_id"]]["paths"]
        assert run.of_type("turn_completed")[0]["result"] == "Done: hello.txt is written."
        undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
        assert not (workspace / "hello.txt").exists()

        # a resumed second turn: the CLI sends the earlier conversation again
        sid = run.of_type("agent_session")[0]["agent_session_id"]
        before = len(server.main_requests())
        again = _agent(monkey_home, workspace, "say hello again", "--continue")
        assert again.returncode == 0, again.stderr
        assert again.of_type("agent_session")[0]["agent_session_id"] == sid
        sent = json.dumps(server.main_requests()[before]["body"]["messages"])
        assert "please create hello.txt" in sent and "say hello again" in sent
        assert "user messages: 1)" not in again.of_type("turn_completed")[0]["result"]
        # `sessions show` names Claude Code's own session and its file (in the CLI's ~/.claude)
        shown = invoke(["sessions", "show", again.events[0]["session_id"]], home=monkey_home, HOME=str(cli_home))
        line = next(x for x in shown.stdout.splitlines() if x.startswith("agent      claude code session"))
        assert sid in line and Path(line.split()[-1]).is_file() and line.split()[-1].endswith(f"{sid}.jsonl")

        # an API error: a clear message and exit status 1
        fail = _agent(monkey_home, workspace, "please fail now")
        assert fail.returncode == 1
        assert "the fake server refuses this on purpose" in fail.stderr
        assert fail.of_type("turn_completed")[0]["reason"] == "error"


@pytest.mark.timeout(600)  # four runs of the real CLI
def test_claude_code_calls_go_through_monkeys_approvals(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    """Headless, with an allow rule for file_write only: a Bash call is refused by monkey (the CLI goes on
    without it), a Write into .git/hooks is refused although the rule allows file_write, and so is a
    command writing ~/.bashrc although a rule allows echo."""
    cli = claude_cli()
    cli_home = tmp_path / "cli-home"
    (cli_home / ".claude").mkdir(parents=True)
    # the person's own Claude Code settings allow everything: monkey does not load them
    (cli_home / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash", "Write", "Edit"], "defaultMode": "bypassPermissions"}})
    )
    (workspace / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    with FakeAnthropic(str(workspace)) as server:
        configure_claude(monkey_home, cli, server, cli_home, allow=("file_write", "shell_execute(echo)"))

        run = _agent(monkey_home, workspace, "please run the command")
        assert run.returncode == 0, run.stderr
        assert not (workspace / "bash.txt").exists()
        (call,) = run.of_type("tool_call")
        assert call["name"] == "Bash"
        (asked,) = run.of_type("approval_requested")
        assert asked["name"] == "shell_execute" and asked["arguments"] == {"command": "echo from-bash > bash.txt"}
        (resolved,) = run.of_type("approval_resolved")
        assert resolved["decision"] == "denied" and resolved["by"] == "policy"
        (result,) = run.of_type("tool_result")
        assert not result["ok"] and "no terminal to ask on" in result["output"]
        (done,) = run.of_type("turn_completed")  # the CLI went on without the call and finished its turn
        assert done["result"].startswith("The tool was refused: denied by monkey: needs approval")

        run = _agent(monkey_home, workspace, "please write the hook")
        assert run.returncode == 0, run.stderr
        assert not (workspace / ".git" / "hooks" / "x").exists()
        (asked,) = run.of_type("approval_requested")
        assert asked["name"] == "file_write" and any("only this call can be approved" in w for w in asked["warnings"])
        assert "needs a person's approval of this exact call" in run.of_type("turn_completed")[0]["result"]

        run = _agent(monkey_home, workspace, "please append to bashrc")
        assert run.returncode == 0, run.stderr
        assert not (cli_home / ".bashrc").exists()
        (resolved,) = run.of_type("approval_resolved")
        assert resolved["decision"] == "denied"
        assert "in your home folder" in run.of_type("turn_completed")[0]["result"]


def test_real_claude_code_gets_an_attached_image(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    """``@shot.png`` with the claude-code backend: the image goes in the stream-json user message, and the
    real CLI passes it on to the model API as an image block."""
    import base64

    from tests.support import images

    cli = claude_cli()
    cli_home = tmp_path / "cli-home"
    cli_home.mkdir()
    shot = images.png(32, 16)
    (workspace / "shot.png").write_bytes(shot)
    with FakeAnthropic(str(workspace)) as server:
        configure_claude(monkey_home, cli, server, cli_home)
        run = _agent(monkey_home, workspace, "what is in @shot.png ?")
        assert run.returncode == 0, run.stderr
        assert "attached shot.png (PNG image, " in run.stderr
        sent = [
            b
            for r in server.main_requests()
            for m in r["body"]["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "image"
        ]
    assert sent, "the CLI sent no image block"
    assert sent[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(sent[0]["source"]["data"]) == shot
