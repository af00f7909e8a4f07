"""The agent loop with a real checkpoint guard: events in order, large files need a person."""

from __future__ import annotations

from pathlib import Path

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.checkpoints.api import Checkpoints
from monkey.checkpoints.guard import CheckpointGuard


class Approver:
    def __init__(self, answer: Decision) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        return self.answer


def run(
    ws: Path,
    home: Path,
    calls: list[ScriptCall],
    approver: Approver,
    *,
    limit: int = 50 * 1024 * 1024,
    no_approval: bool = True,
) -> list:
    import asyncio

    agent = Agent(
        backend=ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=calls), ScriptTurn(text="ok")])),
        workspace=ws,
        approver=approver,
        policy=ApprovalPolicy(mode="auto" if no_approval else "default"),
        checkpoints=CheckpointGuard(ws, home=home, max_file_size=limit),
    )

    async def collect() -> list:
        return [e async for e in agent.run_task("go")]

    return asyncio.run(collect())


def test_checkpoint_comes_before_the_tool_and_names_the_call(workspace: Path, monkey_home: Path) -> None:
    events = run(
        workspace,
        monkey_home,
        [
            ScriptCall(name="file_write", arguments={"path": "a.txt", "content": "a"}),
            ScriptCall(name="file_read", arguments={"path": "a.txt"}),
        ],
        Approver(Decision(approved=False)),
    )
    kinds = [e.type for e in events]
    assert kinds.index("approval_resolved") < kinds.index("checkpoint_created") < kinds.index("tool_started")
    [cp] = [e for e in events if e.type == "checkpoint_created"]
    assert cp.paths == ["a.txt"] and cp.tool == "file_write" and cp.turn == 1 and cp.session_id
    assert kinds.count("checkpoint_created") == 1, "read-only tools take no checkpoint"
    entries = Checkpoints(workspace, home=monkey_home).entries()
    assert [(e.id, e.state, e.call_id) for e in entries] == [(cp.checkpoint_id, "applied", cp.call_id)]


def test_a_large_file_needs_a_person_even_with_no_approval(workspace: Path, monkey_home: Path) -> None:
    (workspace / "big.bin").write_bytes(b"\0" * 4000)
    call = ScriptCall(name="file_write", arguments={"path": "big.bin", "content": "small now"})
    denier = Approver(Decision(approved=False, by="policy", reason="nobody to ask"))
    events = run(workspace, monkey_home, [call], denier, limit=1000)
    [result] = [e for e in events if e.type == "tool_result"]
    assert not result.ok and "over the checkpoint limit" in result.output
    assert any("over the checkpoint limit" in w for w in denier.requests[0].warnings)
    assert (workspace / "big.bin").stat().st_size == 4000
    person = Approver(Decision(approved=True, by="user"))
    run(workspace, monkey_home, [call], person, limit=1000)
    assert (workspace / "big.bin").read_text() == "small now"
    Checkpoints(workspace, home=monkey_home).undo()
    assert (workspace / "big.bin").read_bytes() == b"\0" * 4000


async def test_a_cancelled_shell_command_is_still_recorded(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    import sys

    slow = tmp_path / "slow.py"
    slow.write_text(
        "import pathlib, time\npathlib.Path('made.txt').write_text('x')\nprint('started', flush=True)\ntime.sleep(30)\n"
    )
    call = ScriptCall(name="shell_execute", arguments={"command": f"{sys.executable} {slow}", "timeout": 60})
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=[call]), ScriptTurn(text="ok")])),
        workspace=workspace,
        policy=ApprovalPolicy(mode="auto"),
        checkpoints=CheckpointGuard(workspace, home=monkey_home),
    )
    kinds = []
    async for event in agent.run_task("go"):
        kinds.append(event.type)
        if event.type == "tool_output":
            agent.cancel()
    assert "checkpoint_created" in kinds and kinds[-2] == "turn_completed"
    cps = Checkpoints(workspace, home=monkey_home)
    [entry] = cps.entries()
    assert entry.state == "applied" and entry.paths == ["made.txt"]
    cps.undo()
    assert not (workspace / "made.txt").exists()
