"""A sub-agent with ``isolation: worktree``: its worktree is held while it runs (``monkey worktrees rm`` refuses)."""

from __future__ import annotations

from pathlib import Path

from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.session.setup import SessionRequest, build_agent
from monkey.worktrees import in_use, list_worktrees
from tests.support.cli import write_script

ISOLATED = "---\nname: iso\ndescription: works alone\nisolation: worktree\n---\nYou work alone.\n"


class LookingPerson:
    """A person who, asked about the child's write, first looks whether its worktree is in use."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace, self.home = workspace, home
        self.seen: list[tuple[str, bool]] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.seen += [(w.name, in_use(w.path, self.home)) for w in list_worktrees(self.workspace)]
        return Decision(approved=True)


async def test_an_isolated_child_s_worktree_is_held_while_it_runs(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (monkey_home / "agents").mkdir()
    (monkey_home / "agents" / "iso.md").write_text(ISOLATED)
    call = {"name": "task", "arguments": {"description": "alone", "prompt": "do it", "agent": "iso"}}
    child = {
        "turns": [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "f.txt", "content": "f\n"}}]},
            {"text": "wrote f.txt"},
        ]
    }
    script = write_script(tmp_path / "s.json", [{"tool_calls": [call]}, {"text": "done"}], agents={"iso": child})
    person = LookingPerson(workspace, monkey_home)
    setup = build_agent(SessionRequest(workspace=workspace, backend="scripted", script=str(script)), person)
    session = setup.session(show=lambda event: None, tell=lambda text, level: None)
    await session.open()
    try:
        await session.send("delegate")
    finally:
        await session.close()
    [(name, held)] = person.seen
    assert name.startswith("iso-") and held, "asked mid-run: the child's worktree is held"
    [after] = list_worktrees(workspace)
    assert after.name == name and not in_use(after.path, monkey_home), "let go when the child ended"
    assert (after.path / "f.txt").read_text() == "f\n"
