"""How a person starts and leaves monkey: a mistyped command, bare ``monkey``, the resume
hint, ``--resume`` without an id, and the exit status of an ordinary quit (real ptys)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import invoke, monkey_env, stored_session, write_script
from tests.support.pty import PTY_TIMEOUT, spawn_repl

FAILING_TURN = [{"error": "the model is out to lunch", "error_kind": "invalid_request"}]


def spawn_app(workspace: Path, home: Path, script: Path, *flags: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), *flags],
        env=monkey_env(home, TERM="xterm-256color"),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )


def test_a_mistyped_command_gets_a_suggestion(monkey_home: Path) -> None:
    run = invoke(["agnet", "--task", "x"], home=monkey_home)
    assert run.returncode == 2
    assert run.stderr == "monkey: unknown command 'agnet'; did you mean 'agent'?\n"
    far = invoke(["zzzz"], home=monkey_home)
    assert far.returncode == 2
    assert far.stderr.startswith("monkey: unknown command 'zzzz'; commands: agent, sessions")
    nested = invoke(["sessions", "lst"], home=monkey_home)
    assert nested.returncode == 2
    assert nested.stderr == "monkey: unknown command 'sessions lst'; did you mean 'sessions list'?\n"


def test_bare_monkey_without_a_terminal_prints_help(monkey_home: Path) -> None:
    run = invoke([], home=monkey_home)
    assert run.returncode == 0
    assert run.stdout.startswith("usage: monkey")


@pytest.mark.pty
def test_bare_monkey_on_a_terminal_opens_the_app(workspace: Path, monkey_home: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey"],
        cwd=str(workspace),
        env=monkey_env(monkey_home, TERM="xterm-256color", ANTHROPIC_API_KEY=""),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )
    child.expect_exact("\x1b[?1049h")  # the full-screen app took the screen
    child.expect("iter")  # its status bar is drawn
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert b"--resume" not in child.before, "an empty session has nothing to resume"


@pytest.mark.pty
def test_the_app_quits_with_0_and_says_how_to_resume(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    sid = stored_session(workspace, monkey_home, tmp_path)
    child = spawn_app(workspace, monkey_home, write_script(tmp_path / "s.json", FAILING_TURN), "--resume")
    child.expect_exact("Sessions in proj")  # the app's own picker, for --resume without an id
    child.expect_exact(sid)
    child.send("\r")
    child.expect_exact(f"resumed session {sid}")
    child.send("go on\r")
    child.expect_exact("out to lunch")  # the turn ended with an error
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    tail = child.before.decode(errors="replace").rsplit("\x1b[?1049l", 1)[-1]
    assert child.exitstatus == 0, f"an ordinary quit is a success, as in --plain; after the app: {tail!r}"
    assert f"monkey: resume this session with: monkey agent --resume {sid}" in tail


@pytest.mark.pty
def test_escape_in_the_app_picker_chooses_nothing(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    stored_session(workspace, monkey_home, tmp_path)
    child = spawn_app(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "x"}]), "--resume")
    child.expect_exact("Sessions in proj")
    child.send("\x1b")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    assert b"monkey: no session chosen" in child.before


@pytest.mark.pty
def test_plain_quits_with_0_and_says_how_to_resume(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", FAILING_TURN))
    child.expect_exact("Type a task")
    child.sendline("go")
    child.expect_exact("out to lunch")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    found = re.search(r"monkey: resume this session with: monkey agent --resume (\S+)", child.before)
    assert found, child.before
    listed = invoke(["sessions", "list", "--cwd", str(workspace)], home=monkey_home)
    assert found.group(1) in listed.stdout


@pytest.mark.pty
def test_plain_says_nothing_about_resuming_an_empty_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "x"}]))
    child.expect_exact("Type a task")
    child.sendline("/exit")  # (a Ctrl-D sent before the prompt reads keys would be eaten by the tty)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "--resume" not in child.before


@pytest.mark.pty
def test_plain_keeps_thinking_apart_from_the_answer(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(
        workspace,
        monkey_home,
        write_script(tmp_path / "s.json", [{"thinking": "I should greet back.", "text": "Hello there."}]),
    )
    child.expect_exact("Type a task")
    child.sendline("hi")
    child.expect(r"thinking: [^\r\n]*greet [^\r\n]*back\.(\x1b\[[0-9;]*m)*\r\n(\x1b\[[0-9;]*m)*Hello there\.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_monkey_agent_parses_its_flags_without_the_other_commands_alike() -> None:
    """``monkey agent`` builds only its own parser (the app's first frame does not wait for the
    others): every flag reads the same as with the whole command line's parser."""
    from monkey.cli import build_parser

    whole, alone = build_parser(), build_parser(only="agent")
    assert set(alone.get_default("_commands")) == {"agent"}
    for argv in (
        ["agent"],
        ["agent", "-t", "x", "--mode", "plan", "--max-turns", "3", "-vv", "--log-file", "l"],
        ["agent", "--resume"],
        ["agent", "-c", "--inline", "--backend", "scripted", "--script", "s"],
        ["agent", "--no-approval", "--compact-at", "0.5", "--max-budget-usd", "1.5", "--output-format", "json"],
    ):
        read = {k: v for k, v in vars(alone.parse_args(argv)).items() if k != "_commands"}
        assert read == {k: v for k, v in vars(whole.parse_args(argv)).items() if k != "_commands"}, argv
    assert (
        alone.get_default("_commands")["agent"].format_help() == whole.get_default("_commands")["agent"].format_help()
    )
