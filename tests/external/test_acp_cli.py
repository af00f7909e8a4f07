"""``--backend acp:NAME`` from the command line with the fake ACP agent: the person's ``[acp_agents.NAME]``,
a write the agent asked for and a rule allowed, checkpointed and undone with ``monkey undo``; a write
that no permission covered decided by the engine; unknown names, a missing program, a project that
names an agent."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.acp_agents import fake_acp_exe
from tests.support.cli import invoke
from tests.support.external import run_task


def _configure(home: Path, exe: Path, log: Path, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> None:
    (home / "config.toml").write_text(
        f"[approvals]\nallow = {json.dumps(list(allow))}\ndeny = {json.dumps(list(deny))}\n"
        f'[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\nmode = "default"\n'
        f'[acp_agents.fake.env]\nFAKE_LOG = {json.dumps(str(log))}\nFAKE_MODES = "yolo,default"\n'
    )


def test_a_write_asked_and_allowed_is_undone(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log, allow=("file_write",))
    run = run_task(monkey_home, workspace, "acp:fake", "write hello.txt")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.txt").read_text() == "hello\n"
    kinds = [e["type"] for e in run.events]
    assert "checkpoint_created" in kinds and kinds.index("approval_resolved") < kinds.index("tool_result")
    assert "permission: yes" in run.stdout
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "hello.txt").exists()


def test_a_write_no_permission_covered_is_decided_by_the_engine(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log)
    run = run_task(monkey_home, workspace, "acp:fake", "rawwrite sneaky.txt")
    assert run.returncode == 0, run.stderr
    assert not (workspace / "sneaky.txt").exists()
    (asked,) = run.of_type("approval_requested")
    assert asked["name"] == "file_write" and asked["arguments"]["path"] == "sneaky.txt"
    assert "error -32000" in run.stdout
    # allowed by a rule: written, checkpointed, and undone
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log, allow=("file_write",))
    run = run_task(monkey_home, workspace, "acp:fake", "rawwrite sneaky.txt")
    assert (workspace / "sneaky.txt").read_text() == "raw\n" and "wrote" in run.stdout
    assert invoke(["undo", "--cwd", str(workspace)], home=monkey_home).returncode == 0
    assert not (workspace / "sneaky.txt").exists()


def test_writes_outside_the_workspace_and_into_git_are_refused(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log, allow=("file_write",))
    for target in ("../outside.txt", ".git/hooks/pre-commit"):
        run = run_task(monkey_home, workspace, "acp:fake", f"rawwrite {target}")
        assert run.returncode == 0, run.stderr
        assert "error -32000: monkey refused" in run.stdout, run.stdout
        assert not (workspace / target).exists()


def test_unknown_names_and_missing_programs_are_explained(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), log)
    run = run_task(monkey_home, workspace, "acp:nosuch", "hi")
    assert run.returncode == 2 and "unknown ACP agent 'nosuch'; known: fake, gemini, opencode, qwen" in run.stderr
    run = invoke(
        ["agent", "--backend", "acp:opencode", "--task", "hi", "--cwd", str(workspace)],
        home=monkey_home,
        PATH=str(tmp_path / "bin"),
    )
    assert run.returncode == 2 and "OpenCode not found" in run.stderr and "npm install -g opencode-ai" in run.stderr


def test_a_project_cannot_define_or_choose_an_acp_agent(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    exe = fake_acp_exe(tmp_path / "bin")
    project = workspace / ".monkey"
    project.mkdir(exist_ok=True)
    (project / "config.toml").write_text(f'[agent]\nbackend = "acp:evil"\n[acp_agents.evil]\ncommand = "{exe}"\n')
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")
    run = run_task(monkey_home, workspace, "acp:evil", "hi")
    assert run.returncode == 2 and "unknown ACP agent 'evil'" in run.stderr, run.stderr
