"""An ACP agent's own shell command (``execute``, run by the agent once monkey allowed it): a checkpoint of
its own, opened when allowed and closed when the agent reports it done; ``monkey undo`` reverts exactly it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.agent.loop import Agent
from monkey.checkpoints.guard import CheckpointGuard
from monkey.checkpoints.watch import missing
from monkey.events import NotUndoable
from monkey.permissions.policy import ApprovalPolicy
from tests.support.acp_agents import acp_backend, fake_acp_exe, run_turns
from tests.support.cli import invoke
from tests.support.external import run_task

pytestmark = pytest.mark.external


def _configure(home: Path, exe: Path, log: Path, also: str = "") -> None:
    env = f"FAKE_LOG = {json.dumps(str(log))}\n" + (f"FAKE_ALSO = {json.dumps(also)}\n" if also else "")
    (home / "config.toml").write_text(
        '[approvals]\nallow = ["shell_execute(touch *)"]\n'
        f"[acp_agents.fake]\ncommand = {json.dumps(str(exe))}\n[acp_agents.fake.env]\n{env}"
    )


def test_the_agents_own_command_is_its_own_checkpoint_and_undone_alone(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), tmp_path / "log", also="also.txt")
    run = run_task(monkey_home, workspace, "acp:fake", "shell touch made.txt")
    assert run.returncode == 0, run.stderr
    own = [c for c in run.of_type("checkpoint_created") if c["call_id"] == "x1"]
    assert len(own) == 1 and own[0]["tool"] == "touch made.txt", run.of_type("checkpoint_created")
    assert (workspace / "made.txt").exists() and (workspace / "also.txt").exists()
    undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists()  # the command's change, undone on its own
    assert (workspace / "also.txt").exists(), undo.stdout  # the agent's own write is not the command's


def test_without_the_write_watch_the_commands_change_is_not_attributable_and_the_turn_undoes_it(
    monkey_home: Path, workspace: Path, tmp_path: Path
) -> None:
    """With no write watch monkey cannot tell the command's writes from the agent's own made meanwhile:
    the command's checkpoint names them not attributable; the turn's checkpoint still undoes them."""
    _configure(monkey_home, fake_acp_exe(tmp_path / "bin"), tmp_path / "log", also="also.txt")
    run = invoke(
        [
            "agent",
            "--backend",
            "acp:fake",
            "--task",
            "shell touch made.txt",
            "--output-format",
            "stream-json",
            "--cwd",
            str(workspace),
        ],
        home=monkey_home,
        MONKEY_NO_WRITE_WATCH="1",
    )
    assert run.returncode == 0, run.stderr
    said = [e for e in run.of_type("not_undoable") if e["call_id"] == "x1"]
    assert len(said) == 1 and any("made.txt" in item for item in said[0]["items"]), run.of_type("not_undoable")
    assert [e for e in run.of_type("not_undoable") if e["call_id"] != "x1"] == []  # the turn's is whole
    undo = invoke(
        ["undo", "--session", run.of_type("turn_completed")[0]["session_id"], "--cwd", str(workspace)],
        home=monkey_home,
        MONKEY_NO_WRITE_WATCH="1",
    )
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists() and not (workspace / "also.txt").exists()


@pytest.mark.skipif(bool(missing(Path.cwd())), reason="no write watch here")
def test_a_write_by_another_than_the_agents_command_while_it_runs_is_not_attributed_to_it(
    workspace: Path, tmp_path: Path
) -> None:
    """A later turn: the agent process was started before it, so only its command's processes are the
    command's; the agent's own write while the command is open is named not attributable, not taken."""
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log", FAKE_ALSO="also.txt")
    guard = CheckpointGuard(workspace, home=tmp_path / "home")
    agent = Agent(
        backend=backend,
        workspace=workspace,
        checkpoints=guard,  # type: ignore[arg-type]
        policy=ApprovalPolicy.from_strings(allow=["shell_execute(touch *)"]),
    )
    _, events = run_turns(agent, "text", "shell touch made.txt")
    (said,) = [e for e in events if isinstance(e, NotUndoable) and e.call_id == "x1"]
    assert [item.split(":")[0] for item in said.items] == ["also.txt"], said.items
    (entry,) = [e for e in guard.journal.entries(guard.key) if e.call_id == "x1"]
    assert sorted((r.path, bool(r.unattributed)) for r in entry.files) == [("also.txt", True), ("made.txt", False)]


def test_a_command_the_agent_never_reports_done_is_closed_at_the_turns_end(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log", FAKE_NO_DONE="1")
    guard = CheckpointGuard(workspace, home=tmp_path / "home")
    agent = Agent(
        backend=backend,
        workspace=workspace,
        checkpoints=guard,  # type: ignore[arg-type]
        policy=ApprovalPolicy.from_strings(allow=["shell_execute(touch *)"]),
    )
    run_turns(agent, "shell touch made.txt")
    (entry,) = [e for e in guard.journal.entries(guard.key) if e.call_id == "x1"]
    assert entry.state != "pending" and [r.path for r in entry.files] == ["made.txt"], entry
