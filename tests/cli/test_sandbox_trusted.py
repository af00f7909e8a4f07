"""Commands monkey runs for the person (hooks, ``[workflow] verify``) run in the sandbox the model's
commands run in, since their inputs are in the workspace the model writes; only the person's own config
(``[shell] trusted_commands = "outside"``) lets them out, never a project's. ``monkey agent --task`` as a
real subprocess with the scripted backend, real bubblewrap, real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.tools.sandbox import bubblewrap_problem
from tests.support.cli import invoke, write_script
from tests.support.script import call_turn

pytestmark = pytest.mark.skipif(bool(bubblewrap_problem()), reason=bubblewrap_problem() or "bubblewrap")

HOOK = """
[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "sh hook.sh" }]
"""


def test_a_hook_runs_in_the_sandbox_unless_the_users_own_config_trusts_it(
    scripted, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "hook-outside.txt"  # beside the workspace: only a command outside the sandbox writes it
    # a script the model could have edited; a failure is a warning (exit 1), not a block (exit 2)
    (workspace / "hook.sh").write_text(f"echo from-the-hook > '{target}' || exit 1\n")
    (monkey_home / "config.toml").write_text(HOOK)
    run = scripted([{"text": "done"}])
    assert run.returncode == 0, run.stderr
    [ran] = run.of_type("hook_ran")
    assert not target.exists(), "the hook ran outside the sandbox"
    assert "Read-only file system" in ran["message"]

    # a trusted project cannot let its own hook out
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text('[shell]\ntrusted_commands = "outside"\n')
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n" + HOOK)
    run = scripted([{"text": "done"}])
    assert run.returncode == 0, run.stderr
    assert not target.exists()
    assert "ignored shell.trusted_commands" in run.stderr

    # the person's own file can
    (monkey_home / "config.toml").write_text('[shell]\ntrusted_commands = "outside"\n' + HOOK)
    run = scripted([{"text": "done"}])
    assert run.returncode == 0, run.stderr
    assert target.read_text() == "from-the-hook\n"


def test_a_bad_trusted_commands_value_is_a_usage_error(scripted, monkey_home: Path) -> None:
    (monkey_home / "config.toml").write_text('[shell]\ntrusted_commands = "anywhere"\n')
    run = scripted([{"text": "done"}])
    assert run.returncode == 2 and "shell.trusted_commands must be" in run.stderr


ONE_ROUND = [
    call_turn("file_read", path="README.md"),
    {"text": "Read it."},  # think
    call_turn("exit_plan_mode", plan="1. Nothing"),
    {"text": "Proposed."},  # plan
    {"text": "Nothing to change."},  # do
    {"text": "VERDICT: done\nREASON: fine"},
]  # reflect


@pytest.mark.parametrize("trusted", [False, True])
def test_the_verify_command_runs_in_the_sandbox_unless_trusted(
    workspace: Path, monkey_home: Path, tmp_path: Path, trusted: bool
) -> None:
    target = tmp_path / "verify-outside.txt"
    (workspace / "verify.sh").write_text(f"echo from-verify > '{target}'\n")
    shell = '[shell]\ntrusted_commands = "outside"\n' if trusted else ""
    (monkey_home / "config.toml").write_text(
        f'{shell}[workflow]\nverify = "sh verify.sh"\nmax_iterations = 1\nverify_retries = 0\n'
    )
    script = write_script(tmp_path / "script.json", ONE_ROUND)
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--workflow",
            "tpdr",
            "--task",
            "check",
            "--approve-plan",
            "accept-edits",
        ],
        home=monkey_home,
    )
    [verify] = [e for e in run.of_type("tool_result") if e["name"] == "shell_execute"]
    if trusted:
        assert verify["ok"] and target.read_text() == "from-verify\n", verify["output"]
    else:
        assert not verify["ok"] and not target.exists()
        assert "[sandbox: " in verify["output"] and "not run outside the sandbox" in verify["output"]
