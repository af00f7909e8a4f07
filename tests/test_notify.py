"""Notifications off the terminal (monkey.notify): which sequence a terminal gets, what a line may
hold, notify-send as a real program, a webhook that is down."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from monkey.config import NotifyConfig
from monkey.notify import Notice, Notifier, question_line, terminal_kind, terminal_sequence

NOTICE = Notice(
    "approval", "monkey · approval needed · proj", "shell_execute: make test", session="s1", workspace="proj"
)


@pytest.mark.parametrize(
    ("env", "kind"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, "osc9"),
        ({"TERM": "xterm-kitty"}, "osc9"),
        ({"TERM": "xterm-ghostty"}, "osc9"),
        ({"WT_SESSION": "x"}, "osc9"),
        ({"TERM": "foot"}, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, "osc777"),
        ({"TERM": "xterm-256color"}, ""),
        ({"TERM_PROGRAM": "iTerm.app", "TMUX": "/tmp/t,1,0"}, ""),
    ],
)
def test_the_terminal_gets_the_sequence_it_shows(env: dict[str, str], kind: str) -> None:
    assert terminal_kind(env) == kind


def test_hostile_text_cannot_end_or_forge_a_sequence() -> None:
    evil = Notice("approval", "t;x\x1b]52;c;ZXZpbA==\a", "body\x07\x1b[2J;more\nline")
    for kind in ("osc9", "osc777"):
        sequence = terminal_sequence(kind, evil)
        assert sequence.count("\a") == 1 and sequence.endswith("\a") and sequence.count("\x1b") == 1
    assert terminal_sequence("osc777", evil).split(";")[:3] == ["\x1b]777", "notify", "t,x\\x1b]52,c,ZXZpbA==\\x07"]


def test_the_line_never_holds_content_or_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "dpl-0123456789abcdef")
    assert question_line("file_write", {"path": "a.py", "content": "SECRET BODY"}) == "file_write: a.py"
    assert question_line("shell_execute", {"command": "deploy --token dpl-0123456789abcdef"}) == (
        "shell_execute: deploy --token [redacted]"
    )
    assert "ghp_" not in question_line("shell_execute", {"command": "git push https://ghp_" + "a" * 36 + "@x"})
    assert len(question_line("shell_execute", {"command": "x" * 5000})) == 300


def test_notify_send_is_run_with_the_notice_and_without_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real program named notify-send on PATH records what it was given."""
    record = tmp_path / "record"
    program = tmp_path / "notify-send"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\nenv >> {record}\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "k" * 30)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "DISPLAY": ":0"}
    notifier = Notifier(NotifyConfig(), write=lambda s: None, env=env)
    assert notifier.terminal == "" and notifier.desktop == str(program)
    notifier.send(NOTICE)
    notifier.wait()
    lines = record.read_text().splitlines()
    assert lines[:3] == ["--app-name=monkey", "monkey · approval needed · proj", "shell_execute: make test"]
    assert not any("sk-ant-" in line for line in lines)


def test_without_a_display_or_with_a_known_terminal_notify_send_is_left_alone(tmp_path: Path) -> None:
    program = tmp_path / "notify-send"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert Notifier(NotifyConfig(), env={"PATH": str(tmp_path)}, write=print).desktop is None
    known = Notifier(NotifyConfig(), env={"PATH": str(tmp_path), "DISPLAY": ":0", "TERM": "foot"}, write=print)
    assert known.terminal == "osc777" and known.desktop is None
    assert Notifier(NotifyConfig(desktop="on"), env={"PATH": str(tmp_path)}, write=print).desktop == str(program)


def test_a_webhook_that_is_down_is_logged_and_nothing_else(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    notifier = Notifier(NotifyConfig(url=f"http://127.0.0.1:{port}/", format="json", terminal="off"), env={})
    notifier.send(NOTICE)  # returns at once: the POST is on a thread
    notifier.wait()
    assert not any(t.is_alive() for t in notifier.threads)


def test_what_notifies_can_be_chosen() -> None:
    sent: list[str] = []
    notifier = Notifier(NotifyConfig(terminal="osc9", on=["turn_done"]), write=sent.append, env={})
    notifier.send(NOTICE)
    assert sent == []
    notifier.send(Notice("turn_done", "monkey · done · proj", "the turn took 12 s"))
    assert sent == ["\x1b]9;monkey · done · proj: the turn took 12 s\a"]


def test_a_project_cannot_choose_where_notifications_go(tmp_path: Path, monkey_home: Path) -> None:
    from monkey.config import load_config

    project = tmp_path / "proj"
    (project / ".monkey").mkdir(parents=True)
    (project / ".monkey" / "config.toml").write_text('[notify]\nurl = "https://evil.example/t"\nterminal = "off"\n')
    config = load_config(project, trusted=True)
    assert config.notify.url == "" and config.notify.terminal == "off"
    assert any("notify.url" in n for n in config.notices)
