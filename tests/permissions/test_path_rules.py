"""Path rules match the canonical path: ``..``, absolute paths and symlinks cannot step around
them, and deny rules cover the reading tools too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import ApprovalResolved, ToolResult


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "x").mkdir()
    (root / ".env").write_text("API_KEY=sk-secret\n")
    (root / "docs" / "guide.md").write_text("# guide\n")
    os.symlink(root / ".env", root / "docs" / "env-link")  # inside docs/, pointing at .env
    os.symlink(tmp_path, root / "docs" / "up")  # inside docs/, pointing outside the workspace
    return root


@pytest.mark.parametrize("path", [".env", "./.env", "x/../.env", "docs/../.env", "docs/env-link", "ABS"])
def test_a_deny_rule_holds_however_the_path_is_spelt(ws: Path, path: str) -> None:
    path = str(ws / ".env") if path == "ABS" else path
    policy = ApprovalPolicy.from_strings(deny=["file_read(.env)"])
    decision = policy.check("file_read", {"path": path}, ws)
    assert decision is not None and not decision.approved, path


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("docs/guide.md", True),
        ("docs/new/page.md", True),
        ("./docs/guide.md", True),
        ("docs/../README.md", False),
        ("docs/env-link", False),
        ("docs/up/outside.txt", False),
        ("/tmp/x", False),
    ],
)
def test_an_allow_rule_covers_only_what_resolves_inside_its_glob(ws: Path, path: str, allowed: bool) -> None:
    policy = ApprovalPolicy.from_strings(allow=["file_write(docs/**)"])
    decision = policy.check("file_write", {"path": path, "content": ""}, ws)
    assert (decision is not None and decision.approved) is allowed, path


def test_a_leading_double_star_also_matches_at_the_top(ws: Path) -> None:
    policy = ApprovalPolicy.from_strings(deny=["file_read(**/*.pem)"])
    assert policy.check("file_read", {"path": "key.pem"}, ws) is not None
    assert policy.check("file_read", {"path": "a/b/key.pem"}, ws) is not None
    assert policy.check("file_read", {"path": "key.pem.txt"}, ws) is None


async def test_the_loop_applies_deny_rules_to_reading_tools(ws: Path) -> None:
    calls = [
        ScriptCall(name="file_read", arguments={"path": "x/../.env"}),
        ScriptCall(name="grep_search", arguments={"pattern": "KEY", "path": ".env"}),
        ScriptCall(name="file_read", arguments={"path": "docs/guide.md"}),
    ]
    backend = ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=calls), ScriptTurn(text="done")]))
    policy = ApprovalPolicy.from_strings(deny=["file_read(.env)", "grep_search(.env)"])
    agent = Agent(backend=backend, workspace=ws, policy=policy)
    events = [e async for e in agent.run("read the secrets")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.ok for r in results] == [False, False, True]
    assert all("sk-secret" not in r.output for r in results)
    assert results[0].output == "denied: denied by rule file_read(.env)"
    denials = [e for e in events if isinstance(e, ApprovalResolved)]
    assert [(d.name, d.decision, d.by) for d in denials] == [
        ("file_read", "denied", "rule"),
        ("grep_search", "denied", "rule"),
    ]


async def test_searches_skip_the_files_a_deny_rule_forbids_reading(ws: Path) -> None:
    (ws / "docs" / "notes.md").write_text("API_KEY is documented here\n")
    calls = [
        ScriptCall(name="grep_search", arguments={"pattern": "API_KEY"}),
        ScriptCall(name="glob_search", arguments={"pattern": "**/*"}),
        ScriptCall(name="grep_search", arguments={"pattern": "API_KEY", "path": "docs"}),
    ]
    backend = ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=calls), ScriptTurn(text="done")]))
    agent = Agent(backend=backend, workspace=ws, policy=ApprovalPolicy.from_strings(deny=["file_read(.env)"]))
    events = [e async for e in agent.run("find the key")]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}  # read-only calls run together
    grep_all, globbed, grep_docs = (results[f"call_1_{i}"] for i in range(3))
    assert "sk-secret" not in grep_all.output and "docs/notes.md:1:" in grep_all.output
    assert "a deny rule forbids reading them" in grep_all.output
    assert globbed.output.split("\n")[:-1] == ["docs/guide.md", "docs/notes.md"]
    assert "sk-secret" not in grep_docs.output  # docs/env-link resolves to .env: skipped too
