""" "Approve for good" on a file tool saves a rule for the path's folder in this workspace only, and the
request shows that exact rule before anything is saved (monkey/permissions/rules.py, requests.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monkey.permissions.decide import Call, decide
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.permissions.user_rules import add_rules, saved_rules
from monkey.session.setup import SessionRequest, build_agent
from tests.support.cli import write_script


def allowed(policy: ApprovalPolicy, path: str, ws: Path) -> bool:
    found = policy.check("file_write", {"path": path, "content": "x"}, ws)
    return found is not None and found.approved


def test_the_request_names_the_folder_of_this_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "proj"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "up").symlink_to(ws / "src")
    policy = ApprovalPolicy()
    question = decide(policy, Call("c", "file_write", {"path": "src/pkg/a.py", "content": "x"}, ws)).question
    assert question is not None and question.rules == [f"file_write({ws.resolve()}/src/pkg/**)"]
    top = decide(policy, Call("c", "file_edit", {"path": "README.md", "old": "a", "new": "b"}, ws)).question
    assert top is not None and top.rules == [f"file_edit({ws.resolve()}/**)"]
    through = decide(policy, Call("c", "file_write", {"path": "up/b.py", "content": "x"}, ws)).question
    assert through is not None and through.rules == [f"file_write({ws.resolve()}/src/**)"]  # where it lands


def test_a_saved_rule_covers_that_folder_of_that_workspace_only(tmp_path: Path, monkey_home: Path) -> None:
    ws, other = tmp_path / "proj", tmp_path / "other"
    for root in (ws, other):
        (root / "src").mkdir(parents=True)
    policy = ApprovalPolicy()
    policy.save_rules = lambda rules: add_rules(monkey_home, rules)
    assert policy.keep("file_write", {"path": "src/a.py", "content": "x"}, ws) == [f"file_write({ws}/src/**)"]
    again = ApprovalPolicy.from_strings(allow=saved_rules(monkey_home))  # a later session reads the config
    assert allowed(again, "src/b.py", ws) and allowed(again, "src/deep/c.py", ws)
    assert not allowed(again, "setup.py", ws) and not allowed(again, "docs/x.md", ws)
    assert not allowed(again, "src/b.py", other), "another workspace's src/ is not this one's"
    assert not allowed(again, "src/../../other/src/b.py", ws)


def test_odd_folder_names_are_matched_literally(tmp_path: Path) -> None:
    ws = tmp_path / "a[1]*"
    (ws / "src").mkdir(parents=True)
    sibling = tmp_path / "a1x"
    (sibling / "src").mkdir(parents=True)
    policy = ApprovalPolicy()
    [rule] = policy.keep("file_write", {"path": "src/a.py", "content": "x"}, ws)
    again = ApprovalPolicy.from_strings(allow=[rule])
    assert allowed(again, "src/b.py", ws) and not allowed(again, "src/b.py", sibling)


class _ForGood:
    """The person answers "for good" to every question."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return Decision(approved=True, scope="always", reason="for good")


async def test_for_good_through_the_pipeline_saves_the_rule_it_showed(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (workspace / "src").mkdir()
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "src/a.py", "content": "a\n"}}]},
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "src/b.py", "content": "b\n"}}]},
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "top.py", "content": "t\n"}}]},
        {"text": "done"},
    ]
    approver = _ForGood()
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(write_script(tmp_path / "s.json", turns))),
        approver,
    )
    session = setup.session(show=lambda e: None, tell=lambda text, level: None)
    await session.open()
    await session.send("go")
    await session.close()
    rule = f"file_write({workspace.resolve()}/src/**)"
    assert [q.arguments["path"] for q in approver.asked] == ["src/a.py", "top.py"]  # b.py: the saved rule
    assert approver.asked[0].rules == [rule]
    assert saved_rules(monkey_home) == [rule, f"file_write({workspace.resolve()}/**)"]
