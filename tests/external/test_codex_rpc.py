"""Codex's approval requests in monkey's vocabulary (monkey/backends/codex/rpc.py), and a patch
touching several files decided path by path through the backend (a recorded stream, edited)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.backends.codex import rpc
from monkey.backends.gate import GateAnswer
from tests.support.external import FIXTURES, configure, decisions, run_task

WS = Path("/w")


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("/bin/bash -lc 'cat missing.txt'", "cat missing.txt"),
        (
            "/bin/bash -lc \"printf 'hi there\\\\n' > hello.txt && echo wrote hello.txt\"",
            "printf 'hi there\\n' > hello.txt && echo wrote hello.txt",
        ),
        ("bash -c 'ls'", "ls"),
        ("/usr/bin/zsh -lc 'echo a; rm -rf b'", "echo a; rm -rf b"),
        ("python -c 'print(1)'", "python -c 'print(1)'"),  # not a shell: as it is
        ("bash -lc 'unclosed", "bash -lc 'unclosed"),  # cannot be split: as it is
        ("bash -lc a b", "bash -lc a b"),
    ],
)
def test_the_script_inside_codexs_shell_wrapper_is_judged(command: str, script: str) -> None:
    assert rpc.unwrap_shell(command) == script


def test_command_call_names_another_folder() -> None:
    params = {"itemId": "c1", "command": "/bin/bash -lc 'make'", "cwd": "/w/sub", "reason": "build it"}
    call = rpc.command_call(params, WS)
    assert (call.call_id, call.tool, call.arguments, call.reason) == (
        "c1",
        "shell_execute",
        {"command": "cd sub && make"},
        "build it",
    )
    assert rpc.command_call({**params, "cwd": "/w"}, WS).arguments == {"command": "make"}
    assert rpc.command_call({**params, "cwd": "/etc"}, WS).arguments == {"command": "cd /etc && make"}


def test_file_calls_one_per_path() -> None:
    item = {
        "changes": [
            {"path": "/w/a.txt", "kind": {"type": "add"}, "diff": "new\n"},
            {"path": "/w/b.txt", "kind": {"type": "delete"}, "diff": ""},
            {"path": "/w/c.txt", "kind": {"type": "update", "move_path": "/w/d/c.txt"}, "diff": "@@ -1 +1 @@\n"},
            "junk",
        ]
    }
    calls = rpc.file_calls({"itemId": "f1"}, item, WS)
    assert [(c.tool, c.arguments["path"]) for c in calls] == [
        ("file_write", "a.txt"),
        ("file_delete", "b.txt"),
        ("file_edit", "c.txt"),
        ("file_write", "d/c.txt"),
    ]
    assert calls[0].arguments["content"] == "new\n" and {c.call_id for c in calls} == {"f1"}


def test_a_file_change_never_announced_asks_as_the_agents_own_tool() -> None:
    (call,) = rpc.file_calls({"itemId": "f9", "reason": "why"}, None, WS)
    assert call.tool == "apply_patch" and call.arguments == {"item": "f9"}


def test_answers() -> None:
    def decision(answer: GateAnswer) -> str:
        return json.loads(rpc.answer(7, answer))["result"]["decision"]

    assert decision(GateAnswer(True)) == "accept"
    assert decision(GateAnswer(False, "no")) == "decline"
    assert decision(GateAnswer(False, "stop", stop=True)) == "cancel"
    err = json.loads(rpc.error_answer(8, "monkey does not answer this"))
    assert err["id"] == 8 and err["error"]["code"] == -32601


def _two_file_patch(tmp_path: Path, second: str) -> Path:
    """app_patch.jsonl with a second file in the change."""
    out = tmp_path / "fixtures" / "codex"
    out.mkdir(parents=True)
    lines = []
    for line in (FIXTURES / "codex" / "app_patch.jsonl").read_text().splitlines():
        obj = json.loads(line)
        item = obj.get("params", {}).get("item") if isinstance(obj.get("params"), dict) else None
        if isinstance(item, dict) and item.get("type") == "fileChange":
            item["changes"].append({"path": f"@WORKSPACE@/{second}", "kind": {"type": "add"}, "diff": "x\n"})
        lines.append(json.dumps(obj))
    (out / "app_patch.jsonl").write_text("\n".join(lines) + "\n")
    return out.parent


@pytest.mark.parametrize(("second", "decision"), [("b.txt", "accept"), (".git/hooks/post-commit", "decline")])
def test_a_patch_of_two_files_is_decided_path_by_path(
    monkey_home: Path, workspace: Path, fake_codex: Path, tmp_path: Path, second: str, decision: str
) -> None:
    fixtures = _two_file_patch(tmp_path, second)
    log = tmp_path / "log.jsonl"
    configure(
        monkey_home,
        "codex",
        fake_codex,
        allow=("file_write",),
        FAKE_LOG=str(log),
        FAKE_VERSION="codex-cli 0.169.0",
        FAKE_REPLAY=str(fixtures / "codex" / "app_patch.jsonl"),
    )
    run = run_task(monkey_home, workspace, "codex", "please patch notes.txt")
    assert run.returncode == 0, run.stderr
    assert decisions(log) == [decision]
    resolved = run.of_type("approval_resolved")
    assert [r["decision"] for r in resolved] == (
        ["approved", "approved"] if decision == "accept" else ["approved", "denied"]
    )
    per_call = [c for c in run.of_type("checkpoint_created") if c["tool"] == "fileChange"]
    if decision == "accept":
        assert sorted(p for c in per_call for p in c["paths"]) == ["b.txt", "notes.txt"]
