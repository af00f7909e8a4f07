"""The inline approval prompt of ``--task`` and ``--plain`` on a real terminal (pexpect):
Ctrl-C after an answer, keys typed ahead, and a redirected stdout."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import write_script
from tests.support.pty import PTY_TIMEOUT, refuse_without_reason, sleeper_script, spawn_repl, spawn_task

pytestmark = pytest.mark.pty


def test_ctrl_c_stops_a_task_after_an_inline_answer(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_task(workspace, monkey_home, sleeper_script(tmp_path))
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("tool is running")
    started = time.monotonic()
    child.sendintr()
    child.expect_exact("cancelling")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert time.monotonic() - started < 30, "the sleep was stopped, not waited for"
    assert "never reached" not in child.before
    assert time.monotonic() - started < 30, "the sleep was stopped, not waited for"


def test_ctrl_c_stops_a_plain_turn_after_an_inline_answer(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, sleeper_script(tmp_path))
    child.expect_exact("Type a task")
    child.sendline("run the slow thing")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("tool is running")
    started = time.monotonic()
    child.sendintr()
    child.expect_exact("(cancelling)")
    child.sendline("/exit")  # read by the REPL's prompt once the turn has ended
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "never reached" not in child.before
    assert time.monotonic() - started < 30, "the sleep was stopped, not waited for"


def test_keys_typed_while_a_tool_runs_do_not_answer_the_next_question(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    wait = tmp_path / "wait.py"
    wait.write_text(
        "import pathlib, time\nprint('waiting for you', flush=True)\n"
        "end = time.monotonic() + 60\n"
        "while not pathlib.Path('go').exists() and time.monotonic() < end:\n    time.sleep(0.02)\n"
    )
    command = f"{sys.executable} {wait}"
    (monkey_home / "config.toml").write_text(f'[approvals]\nallow = ["shell_execute({command})"]\n')
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": command}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "A\n"}}]},
            {"text": "Finished."},
        ],
    )
    child = spawn_task(workspace, monkey_home, script)
    child.expect_exact("waiting for you")
    child.send("y\r")  # typed ahead, before any question was on the screen
    (workspace / "go").write_text("")
    child.expect_exact("allow? [y/a/f/n]")
    refuse_without_reason(child)
    child.expect(pexpect.EOF)
    child.close()
    assert not (workspace / "a.txt").exists(), "the typed-ahead 'yes' approved the write"
    assert child.exitstatus == 4


def test_the_question_goes_to_the_terminal_when_stdout_is_a_file(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "Writing.",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "A\n"}}],
            },
            {"text": "All written."},
        ],
    )
    out = tmp_path / "out.txt"
    child = spawn_task(workspace, monkey_home, script, command=f"> '{out}'")
    child.expect_exact("file_write needs approval")
    child.expect_exact("+A")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workspace / "a.txt").read_text() == "A\n"
    text = out.read_text()
    assert "All written." in text
    assert "allow?" not in text and "needs approval" not in text


@pytest.mark.subprocess
def test_ctrl_c_between_turns_does_not_end_the_repl(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "First answer."}, {"text": "Second answer."}])
    child = spawn_repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("one")
    child.expect_exact("First answer.")
    child.kill(signal.SIGINT)  # a SIGINT between turns (at the prompt or before it): nothing to cancel
    child.sendline("two")
    child.expect_exact("Second answer.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_two_sub_agents_asking_at_once_are_asked_in_turn(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    def task(description: str) -> dict:
        return {"name": "task", "arguments": {"description": description, "prompt": "write it", "agent": "general"}}

    def child(path: str) -> dict:
        return {
            "turns": [
                {"tool_calls": [{"name": "file_write", "arguments": {"path": path, "content": "x\n"}}]},
                {"text": f"wrote {path}"},
            ]
        }

    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [task("first file"), task("second file")]}, {"text": "both written"}],
        agents={"general#1": child("a.txt"), "general#2": child("b.txt")},
    )
    term = spawn_task(workspace, monkey_home, script)
    term.expect_exact("file_write needs approval")
    term.expect(r"asked by general \(sub-agent\): (first|second) file")
    term.expect_exact("allow? [y/a/f/n]")
    term.sendline("a")  # for the session: the other child's waiting request is covered, not asked
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 0, term.before
    assert "both written" in term.before
    assert "needs approval" not in term.before, "asked once only"
    assert (workspace / "a.txt").read_text() == (workspace / "b.txt").read_text() == "x\n"


def test_a_plain_session_notifies_on_its_terminal_when_a_question_waits_and_a_long_turn_ends(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """``[notify] terminal = "osc9"``: the question and the turn's end reach the terminal as OSC 9."""
    (monkey_home / "config.toml").write_text('[ui]\nlong_turn = 0\n[notify]\nterminal = "osc9"\n')
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "SECRET\n"}}]},
            {"text": "Written."},
        ],
    )
    child = spawn_repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("write a.txt")
    child.expect_exact("\x1b]9;monkey · approval needed · proj: file_write: a.txt\x07")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("Written.")
    child.expect_exact("\x1b]9;monkey · done · proj: the turn took ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_with_the_monitor_beside_a_notification_links_to_the_sessions_page(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    """``--web``: the webhook's notice of a waiting question links to that session's page on the monitor
    this process serves (its address as printed, without the one-time token), and the page is there."""
    import http.server
    import json
    import re
    import threading
    import urllib.request

    got: list[dict[str, str]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (monkey_home / "config.toml").write_text(
        f'[notify]\nterminal = "off"\nformat = "json"\nurl = "http://127.0.0.1:{server.server_address[1]}/hook"\n'
    )
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]},
            {"text": "Written."},
        ],
    )
    try:
        child = spawn_repl(workspace, monkey_home, script, "--web")
        child.expect(r"monkey web: (http://127\.0\.0\.1:\d+)/\?token=(\S+)")
        base, token = child.match.group(1), child.match.group(2)
        child.expect_exact("Type a task")
        child.sendline("write a.txt")
        child.expect_exact("allow? [y/a/f/n]")
        for _ in range(int(PTY_TIMEOUT * 10)):  # the webhook is posted on a thread of its own
            if got:
                break
            time.sleep(0.1)
        child.sendline("y")
        child.expect_exact("Written.")
        assert len(got) == 1 and got[0]["kind"] == "approval", got
        link = got[0]["link"]
        assert token not in link
        found = re.fullmatch(re.escape(base) + r"/session\?id=(s[0-9a-f]+)", link)
        assert found and found.group(1) == got[0]["session"], link
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        opener.open(f"{base}/?token={token}").read()  # the person's browser: token traded for the cookie
        assert opener.open(link).status == 200
        child.sendline("/exit")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    finally:
        server.shutdown()
        server.server_close()
