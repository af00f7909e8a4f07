"""``monkey agent --task`` on a real terminal (a pty): inline approvals as a person answers them."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import invoke, monkey_env, write_script
from tests.support.pty import refuse_without_reason

pytestmark = pytest.mark.pty


def spawn(workspace: Path, home: Path, script: Path, *flags: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        [
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "do it",
            *flags,
        ],
        env=monkey_env(home, TERM="xterm"),
        encoding="utf-8",
        timeout=20,
        dimensions=(40, 120),
    )


def test_approve_once_and_for_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "Writing.",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "A\n"}}],
            },
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "b.txt", "content": "B\n"}}]},
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "c.txt", "content": "C\n"}}]},
            {"text": "All three written."},
        ],
    )
    child = spawn(workspace, monkey_home, script)
    child.expect_exact("Writing.")
    child.expect_exact("+A")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("y")
    child.expect_exact("allow for this session: every file_write call")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("a")
    child.expect_exact("All three written.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [p.read_text() for p in sorted(workspace.glob("*.txt"))] == ["A\n", "B\n", "C\n"]


def test_deny_with_reason_and_hidden_characters(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "echo hi\u202e; touch pwned"}}]},
            {"text": "Understood."},
        ],
    )
    child = spawn(workspace, monkey_home, script)
    child.expect_exact("\\u202e")
    child.expect_exact("right-to-left override")
    child.expect_exact("runs through a shell")
    child.expect_exact("allow? [y/a/n]")
    child.sendline("n")
    child.expect_exact("tell the model why")
    child.sendline("please do not")
    child.expect_exact("Understood.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, "the person steered and the model finished: the task completed"
    assert not (workspace / "pwned").exists()


def test_deny_without_reason_stops(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "file_delete", "arguments": {"path": "README.md"}}]},
            {"text": "never"},
        ],
    )
    child = spawn(workspace, monkey_home, script)
    child.expect_exact("allow? [y/a/f/n]")
    refuse_without_reason(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 4
    assert "never" not in child.before
    assert (workspace / "README.md").exists()


def test_allow_for_good_saves_a_rule_to_the_users_config(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "config.toml").write_text("# my settings\n[ui]\nbell = false  # quiet\n")
    line = f"{sys.executable} -c \"print('tests ran')\""
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": line}}]},
            {"text": "Ran them."},
        ],
    )
    child = spawn(workspace, monkey_home, script)
    rule = f"shell_execute({Path(sys.executable).name})"  # the program, named as a command would be
    child.expect_exact(f"allow for good (saved to your config): {rule}")
    child.expect_exact("allow? [y/a/f/n]")
    child.sendline("f")
    child.expect_exact("Ran them.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    config = (monkey_home / "config.toml").read_text()
    assert config.startswith("# my settings\n[ui]\nbell = false  # quiet\n")  # the person's file, kept as it was
    assert f'"{rule}"' in config
    # the next session runs it without asking (no terminal at all: nobody could answer)
    again = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "again",
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
    )
    assert again.returncode == 0, again.stderr
    assert [e["by"] for e in again.of_type("approval_resolved")] == ["rule"]


def test_the_question_for_an_approved_command_names_no_run_outside_the_sandbox(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "shell_execute",
                        "arguments": {"command": f"python3 -c \"open('{target}', 'w').write('x')\""},
                    }
                ]
            },
            {"text": "Done."},
        ],
    )
    child = spawn(workspace, monkey_home, script)
    child.expect_exact("allow? [y/a/f/n]")
    assert "OUTSIDE the sandbox" not in child.before  # approved, it still runs in the sandbox
    child.sendline("y")
    child.expect_exact("the sandbox blocked it")  # so the person is asked again, about a run outside
    child.expect_exact("this command runs again OUTSIDE the sandbox")
    child.expect_exact("allow? [y/n]")
    refuse_without_reason(child)
    child.expect(pexpect.EOF)
    child.close()
    assert not target.exists()
