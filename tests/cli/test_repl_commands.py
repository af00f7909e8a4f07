"""The ``--plain`` REPL's slash commands on a real terminal (a pty), as a person types them:
``/help``, ``/undo``, ``/checkpoints``, ``/sessions``, ``/resume``, ``/model``, ``/backend``
and ``/events``; what they store is read back with ``monkey sessions``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pexpect
import pytest

from monkey.session.commands import COMMANDS
from tests.support.cli import invoke, write_script
from tests.support.pty import spawn_repl

pytestmark = pytest.mark.pty


def _repl(workspace: Path, home: Path, script: Path, *flags: str) -> pexpect.spawn:
    return spawn_repl(workspace, home, script, *flags, columns=200)


def _quit(child: pexpect.spawn) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def _sessions(workspace: Path, home: Path) -> list[dict]:
    listing = invoke(["sessions", "list", "--json", "--cwd", str(workspace)], home=home)
    assert listing.returncode == 0, listing.stderr
    return json.loads(listing.stdout)


def _events(session_id: str, home: Path) -> list[dict]:
    export = invoke(["sessions", "export", session_id, "--format", "jsonl"], home=home)
    assert export.returncode == 0, export.stderr
    return [json.loads(line) for line in export.stdout.splitlines() if line.strip()]


def test_help_lists_every_shared_command(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = _repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "unused"}]))
    child.expect_exact("Type a task")
    child.sendline("/help")
    for name, what in COMMANDS.items():  # in the order the shared list gives
        child.expect_exact(name)
        child.expect_exact(what)
    child.expect_exact("Ctrl-D on an empty line quits")
    child.sendline("/nope")
    child.expect_exact("unknown command /nope; /help lists them")
    _quit(child)


def test_undo_refusal_force_and_checkpoints(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "Rewriting.",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "README.md", "content": "# changed\n"}}],
            },
            {"text": "Rewritten."},
        ],
    )
    child = _repl(workspace, monkey_home, script, "--no-approval")
    child.expect_exact("Type a task")
    child.sendline("/undo")
    child.expect_exact("nothing to undo in session")
    child.sendline("rewrite the readme")
    child.expect_exact("Rewritten.")
    assert (workspace / "README.md").read_text() == "# changed\n"

    child.sendline("/checkpoints")
    child.expect_exact("checkpoints of this session")
    child.expect(r"1\. \S+ \S+  file_write  applied  \+1 -1  README\.md")
    child.sendline("/checkpoints show 1")
    child.expect_exact("-# proj")
    child.expect_exact("+# changed")

    (workspace / "README.md").write_text("# mine\n")  # someone else changes it since
    child.sendline("/undo")
    child.expect_exact("the undo was refused: README.md")
    child.sendline("/model")  # a marker: the refusal changed nothing
    child.expect_exact("model: scripted on scripted")
    assert (workspace / "README.md").read_text() == "# mine\n"
    child.sendline("/undo --force")
    child.expect_exact("undone: reverted README.md")
    child.sendline("/checkpoints")
    child.expect(r"file_write  undone")
    _quit(child)
    assert (workspace / "README.md").read_text() == "# proj\n"

    [session] = _sessions(workspace, monkey_home)
    undos = [e for e in _events(session["id"], monkey_home) if e["type"] == "undo_applied"]
    assert len(undos) == 1 and undos[0]["paths"] == ["README.md"] and undos[0]["forced"] is True


def test_sessions_and_resume_in_the_same_process(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    for prompt in ("first task", "second task"):
        script = write_script(tmp_path / "t.json", [{"text": f"done: {prompt}"}])
        assert (
            invoke(
                ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", prompt],
                home=monkey_home,
            ).returncode
            == 0
        )
    first = next(s for s in _sessions(workspace, monkey_home) if s["title"] == "first task")

    script = write_script(tmp_path / "s.json", [{"text": "Hello there."}, {"text": "Back in the first one."}])
    child = _repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("hello")
    child.expect_exact("Hello there.")
    child.sendline("/sessions")
    child.expect_exact("sessions of this workspace")
    child.expect(r"\*  1\. s\S+ .*  1 turn   \$0\.0000  active\s+hello")
    child.expect(r"   2\. s\S+ .*  1 turn   \$0\.0000  completed\s+second task")
    child.expect(r"   3\. s\S+ .*  1 turn   \$0\.0000  completed\s+first task")
    child.sendline("/resume " + first["id"][:-3])  # a unique prefix is enough
    child.expect(r"resumed session (\S+) \(2 messages, 1 turn,")
    assert child.match.group(1) == first["id"]
    child.expect_exact("last message: first task")
    child.sendline("/resume " + first["id"])
    child.expect_exact("that is this session")
    child.sendline("where was I?")
    child.expect_exact("Back in the first one.")
    _quit(child)

    sessions = {s["title"]: s for s in _sessions(workspace, monkey_home)}
    assert sessions["first task"]["turns"] == 2 and sessions["first task"]["state"] == "completed"
    assert sessions["hello"]["turns"] == 1 and sessions["hello"]["state"] == "completed"
    ended = [e for e in _events(sessions["hello"]["id"], monkey_home) if e["type"] == "session_ended"]
    assert [e["reason"] for e in ended] == ["completed"]
    prompts = [e["prompt"] for e in _events(first["id"], monkey_home) if e["type"] == "turn_started"]
    assert prompts == ["first task", "where was I?"]


def test_backend_and_model_switch(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "Scripted answer."}])
    child = _repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("one?")
    child.expect_exact("Scripted answer.")
    child.sendline("/backend")
    child.expect_exact("backend: scripted (scripted)")
    child.expect(r"\* scripted\s+replays --script")
    for name in ("local", "anthropic", "openai", "claude-code", "codex"):
        child.expect_exact(name)
    child.expect_exact("/backend NAME [MODEL] switches")
    child.sendline("/backend nope")
    child.expect_exact("unknown backend 'nope'")
    child.sendline("/backend scripted")
    child.expect_exact("now using scripted · scripted")
    child.sendline("/model other-model")
    child.expect_exact("now using scripted · other-model")
    child.sendline("/model")
    child.expect_exact("model: other-model on scripted")
    child.sendline("two?")  # the new scripted backend replays its script from the start
    child.expect_exact("Scripted answer.")
    _quit(child)

    [session] = _sessions(workspace, monkey_home)
    changes = [
        (e["from_model"], e["to_model"]) for e in _events(session["id"], monkey_home) if e["type"] == "backend_changed"
    ]
    assert changes == [("scripted", "scripted"), ("scripted", "other-model")]
    assert session["turns"] == 2


def test_events_toggle_prints_escaped_event_lines(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "First \x1b]0;pwned\x07answer."},
            {"text": "Second answer."},
        ],
    )
    child = _repl(workspace, monkey_home, script)
    child.logfile_read = seen = io.StringIO()
    child.expect_exact("Type a task")
    child.sendline("/events")
    child.expect_exact("(event lines on")
    child.sendline("one?")
    child.expect_exact("· session_started")
    child.expect_exact("· turn_started")
    child.expect_exact("· message_completed")
    child.expect_exact("· turn_completed")
    child.sendline("/events")
    child.expect_exact("(event lines off)")
    assert "text_delta" not in child.before, "streamed pieces are not listed one by one"
    child.sendline("two?")
    child.expect_exact("Second answer.")
    child.sendline("/model")  # a marker after the turn
    child.expect_exact("model: scripted on scripted")
    assert "· " not in child.before
    _quit(child)
    assert "\x1b]0;pwned" not in seen.getvalue(), "model text never drives the terminal"
    assert "\\x1b]0;pwned\\x07" in seen.getvalue(), "it is shown escaped"


def test_commands_that_change_nothing_store_no_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = _repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "hi"}]))
    child.expect("Ctrl-D to quit")
    for command, says in [
        ("/compact", "nothing to compact yet"),
        ("/undo", "nothing"),
        ("/checkpoints", ""),
        ("/approvals", ""),
        ("/help", "/exit"),
    ]:
        child.sendline(command)
        if says:
            child.expect(says)
    _quit(child)
    assert _sessions(workspace, monkey_home) == []


def test_copy_sends_the_last_answer_to_the_terminal_clipboard(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import base64

    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "Copy me, please."}]))
    child.expect_exact("Type a task")
    child.sendline("/copy")
    child.expect_exact("nothing to copy yet")
    child.sendline("say something")
    child.expect_exact("Copy me, please.")
    child.sendline("/copy")
    child.expect_exact("\x1b]52;c;" + base64.b64encode(b"Copy me, please.").decode() + "\a")
    child.expect_exact("copied the last answer to the clipboard (16 characters, 1 line)")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()


def test_shift_tab_switches_the_mode_and_keeps_the_half_typed_line(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "Planned."}])
    child = spawn_repl(workspace, monkey_home, script)
    child.expect_exact("Type a task")
    child.send("plan the wo")
    child.send("\x1b[Z")  # Shift+Tab
    child.expect_exact("mode: accept-edits")
    child.send("\x1b[Z")
    child.expect_exact("mode: plan")
    child.send("rk\r")
    child.expect_exact("Planned.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    listed = json.loads(invoke(["sessions", "list", "--json"], home=monkey_home, cwd=workspace).stdout)
    exported = invoke(["sessions", "export", listed[0]["id"]], home=monkey_home).stdout
    said = [json.loads(line) for line in exported.splitlines() if '"turn_started"' in line]
    assert [e["prompt"] for e in said] == ["plan the work"]
