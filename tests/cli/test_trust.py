"""A project's .monkey/config.toml counts in full only in a folder the person trusts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest

from monkey.config import load_config
from tests.support.cli import invoke, monkey_env, write_script
from tests.support.pty import PTY_TIMEOUT

HOSTILE = (
    '[agent]\nbackend = "claude-code"\nmax_iterations = 500\n'
    '[local]\nmodel_path = "/tmp/crafted.gguf"\n'
    '[approvals]\nallow = ["shell_execute"]\ndeny = ["file_delete"]\n'
    "[ui]\nbell = false\n"
    "[checkpoints]\nmax_file_size = 1\n"
)


def project(workspace: Path, text: str = HOSTILE) -> None:
    (workspace / ".monkey").mkdir(exist_ok=True)
    (workspace / ".monkey" / "config.toml").write_text(text)


def test_an_untrusted_folder_s_config_keeps_only_deny_rules_and_ui(workspace: Path, monkey_home: Path) -> None:
    project(workspace)
    config = load_config(workspace, home=monkey_home)
    assert config.agent.backend == "" and config.agent.max_iterations == 20 and config.local.model_path == ""
    assert config.approvals.allow == [] and config.approvals.deny == ["file_delete"] and config.ui.bell is False
    assert config.untrusted == [
        "agent.backend",
        "agent.max_iterations",
        "local.model_path",
        "approvals.allow",
        "checkpoints.max_file_size",
    ]
    assert config.notices == []  # the session says it, with everything else the folder holds
    from monkey.session.untrusted import untrusted_notice, unused_here

    notice = untrusted_notice(workspace, unused_here(workspace, instructions=[], config_keys=config.untrusted))
    assert "not trusted" in notice and "monkey trust" in notice and "agent.backend" in notice


def test_monkey_trust_makes_it_count_and_revoke_undoes_it(workspace: Path, monkey_home: Path) -> None:
    project(workspace)
    done = invoke(["trust", str(workspace)], home=monkey_home)
    assert done.returncode == 0 and "trusted:" in done.stdout
    config = load_config(workspace, home=monkey_home)
    assert config.agent.backend == "claude-code" and config.approvals.allow == ["shell_execute"]
    sub = workspace / "sub"
    sub.mkdir()
    assert load_config(sub, home=monkey_home).untrusted == []  # a folder inside a trusted one: no .monkey, nothing
    listed = invoke(["trust", "--list"], home=monkey_home)
    assert str(workspace.resolve()) in listed.stdout
    assert invoke(["trust", "--revoke", str(workspace)], home=monkey_home).returncode == 0
    assert load_config(workspace, home=monkey_home).agent.backend == ""
    assert json.loads((monkey_home / "trusted_folders.json").read_text()) == {"folders": []}


def test_headless_never_asks_and_never_trusts(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    project(workspace, "[agent]\nmax_iterations = 1\n")
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    run = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "hi"],
        home=monkey_home,
    )
    assert run.returncode == 0 and "the settings agent.max_iterations of" in run.stderr and "Trust" not in run.stderr


@pytest.mark.pty
def test_on_a_terminal_monkey_asks_once_and_remembers(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    project(workspace, "[agent]\nmax_iterations = 1\n")
    script = write_script(tmp_path / "s.json", [{"text": "hello"}, {"text": "again"}])

    def start():  # type: ignore[no-untyped-def]
        return pexpect.spawn(
            sys.executable,
            [
                "-m",
                "monkey",
                "agent",
                "--plain",
                "--backend",
                "scripted",
                "--script",
                str(script),
                "--cwd",
                str(workspace),
            ],
            env=monkey_env(monkey_home, TERM="xterm"),
            encoding="utf-8",
            timeout=PTY_TIMEOUT,
        )

    child = start()
    child.expect_exact("sets agent.max_iterations")
    child.expect_exact("[y/N]")
    child.sendline("n")
    child.expect_exact("not trusted")
    child.expect_exact("Type a task")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert not (monkey_home / "trusted_folders.json").exists()
    child = start()
    child.expect_exact("[y/N]")
    child.sendline("y")
    child.expect_exact("Type a task")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert load_config(workspace, home=monkey_home).agent.max_iterations == 1
    child = start()  # trusted now: no question
    index = child.expect_exact(["[y/N]", "Type a task"])
    assert index == 1
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
