"""One rule of the protected set: what monkey reads as configuration or runs as code is written only
after a person approved that exact call (monkey/permissions/protected.py, decide.py), in every mode,
whatever the rules and grants say; and the sandbox keeps it read-only, also before it exists."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from monkey.permissions.decide import Call, decide
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.protected import Guarded, named_scripts
from monkey.permissions.requests import HeadlessApprover
from monkey.session.setup import SessionRequest, build_agent
from monkey.tools.base import ShellSettings, ToolContext, ToolError
from monkey.tools.sandbox import Sandbox, bubblewrap_problem, landlock_problem
from monkey.tools.shell import ShellArgs, ShellExecute
from tests.support.cli import write_script

PY = sys.executable


def verdict(policy: ApprovalPolicy, tool: str, arguments: dict[str, Any], ws: Path):  # type: ignore[no-untyped-def]
    return decide(policy, Call("c1", tool, arguments, ws))


def loosest(ws: Path) -> ApprovalPolicy:
    """auto mode, a grant and an allow rule for every tool involved: nothing but the protected set asks."""
    policy = ApprovalPolicy.from_strings(allow=["file_write", "file_edit", "shell_execute"], mode="auto")
    policy.grants["file_write"] = "every file_write call"
    policy.guarded = Guarded(scripts=named_scripts(["./scripts/check.sh --fast", "python tools/lint.py"], ws))
    return policy


@pytest.mark.parametrize(
    "path",
    [
        ".claude/settings.json",
        ".claude/skills/x/SKILL.md",
        ".agents/skills/x/SKILL.md",
        ".claude/agents/a.md",
        ".mcp.json",
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        "sub/pkg/AGENTS.md",
        "docs/agents.MD",
        ".Claude/x",
        "scripts/check.sh",
        "tools/lint.py",
        "link-to-agents",
    ],
)
def test_file_tools_writing_config_or_code_need_a_person_every_time(path: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("be nice\n")
    (ws / "link-to-agents").symlink_to(ws / "AGENTS.md")
    for mode in ("auto", "accept-edits", "default"):
        policy = loosest(ws)
        policy.mode = mode  # type: ignore[assignment]
        found = verdict(policy, "file_write", {"path": path, "content": "x"}, ws)
        assert found.decision is None, (path, mode)
        assert found.question is not None and found.question.person_only
        assert found.question.grant == "" and found.question.rules == []  # only this call can be approved
    assert verdict(loosest(ws), "file_write", {"path": "src/a.py", "content": "x"}, ws).decision is not None


@pytest.mark.parametrize(
    "command",
    [
        "sed -i s/nice/evil/ AGENTS.md",
        "cp x .claude/settings.json",
        "echo '{}' > .mcp.json",
        "tee scripts/check.sh",
        "mv evil.py tools/lint.py",
        "cp x sub/CLAUDE.md",
        "mkdir -p .agents/skills/x",
        "ln -sf /tmp/x .monkey",
        "rm -rf .claude",
    ],
)
def test_shell_commands_naming_config_or_code_need_a_person(command: str, tmp_path: Path) -> None:
    found = verdict(loosest(tmp_path), "shell_execute", {"command": command}, tmp_path)
    assert found.decision is None and found.question is not None and found.question.person_only, command


@pytest.mark.parametrize(
    "command",
    ["cat AGENTS.md", "grep -r foo .claude", "ls .agents", "pytest -q", "cp a.py b.py", "scripts/check.sh --fast"],
)
def test_reading_or_running_them_is_not_writing(command: str, tmp_path: Path) -> None:
    found = verdict(loosest(tmp_path), "shell_execute", {"command": command}, tmp_path)
    assert found.decision is not None and found.decision.approved, command


def test_the_scripts_configured_commands_name_are_found(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n")
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    found = named_scripts(
        [
            "./scripts/check.sh",
            "sh -c 'ci/run.sh --x'",
            "make -f Makefile",
            "pytest -q",
            "python -m tool --config=conf/tool.toml",
            "/usr/bin/env true",
            "pytest tests/unit",
            "ls docs/",
        ],
        tmp_path,
    )
    root = tmp_path.resolve()
    assert found == {
        root / "scripts" / "check.sh",
        root / "ci" / "run.sh",
        root / "Makefile",
        root / "conf" / "tool.toml",
    }


def test_a_session_protects_the_scripts_of_its_hooks_and_verify(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    (monkey_home / "config.toml").write_text(
        '[workflow]\nverify = "bash ci/verify.sh"\n'
        '[[hooks.PreToolUse]]\nmatcher = ""\nhooks = [{ type = "command", command = "./hooks/pre.py" }]\n'
        '[instructions]\nfiles = ["RULES.md"]\n'
    )
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    for path in ("ci/verify.sh", "hooks/pre.py", "RULES.md", "AGENTS.md"):
        found = verdict(setup.policy, "file_write", {"path": path, "content": "x"}, workspace)
        assert found.question is not None and found.question.person_only, path
    assert verdict(setup.policy, "file_write", {"path": "src/x.py", "content": "x"}, workspace).decision


def _run(sandbox: Sandbox, ws: Path, code: str) -> tuple[bool, str]:
    ctx = ToolContext(workspace=ws, shell=ShellSettings(sandbox=sandbox))
    try:
        return True, asyncio.run(ShellExecute().run(ShellArgs(command=f'{PY} -c "{code}"', timeout=60), ctx)).output
    except ToolError as exc:
        return False, str(exc)


@pytest.mark.parametrize("kind", ["bubblewrap", "landlock"])
def test_the_sandbox_keeps_config_read_only_also_before_it_exists(kind: str, tmp_path: Path) -> None:
    if bubblewrap_problem() if kind == "bubblewrap" else landlock_problem():
        pytest.skip(bubblewrap_problem() or landlock_problem())
    ws = (tmp_path / "ws").resolve()
    (ws / "src").mkdir(parents=True)
    (ws / "ci").mkdir()
    (ws / "ci" / "old.sh").write_text("")
    (ws / "CLAUDE.md").write_text("rules\n")
    (ws / "GEMINI.md").symlink_to("ci/gemini-rules.md")  # a link to a file not there yet
    guarded = Guarded(scripts=named_scripts(["bash ci/verify.sh", "./hooks/pre.py"], ws))
    sandbox = Sandbox(kind, executable="bwrap", keep=guarded.sandbox_paths)  # type: ignore[arg-type]
    for code in (
        "import os; os.makedirs('.monkey/plans')",
        "import os; os.mkdir('.claude')",
        "import os; os.makedirs('.agents/skills/x')",
        "open('.mcp.json', 'w').write('{}')",
        "open('AGENTS.md', 'w').write('x')",
        "open('CLAUDE.md', 'a').write('x')",
        "open('ci/verify.sh', 'w').write('x')",
        "import os; os.makedirs('hooks', exist_ok=True); open('hooks/pre.py', 'w').write('x')",
        "open('ci/gemini-rules.md', 'w').write('x')",
        "open('GEMINI.md', 'w').write('x')",
    ):
        ok, out = _run(sandbox, ws, code)
        assert not ok, (kind, code, out)
    assert _run(sandbox, ws, "open('src/ok.py', 'w').write('x')")[0]
    assert _run(sandbox, ws, "open('ci/old.sh', 'w').write('x')")[0]
    # (Landlock cannot let a command make new entries beside a kept path; bubblewrap can)
    assert _run(sandbox, ws, "open('ci/new.sh', 'w').write('x')")[0] == (kind == "bubblewrap")
    # nothing was made, and the placeholders that held the missing paths are gone again
    assert sorted(p.name for p in ws.iterdir()) == ["CLAUDE.md", "GEMINI.md", "ci", "src"]
    assert not (ws / "ci" / "gemini-rules.md").exists()
    assert {p.name for p in (ws / "ci").iterdir()} <= {"old.sh", "new.sh"}
    assert (ws / "CLAUDE.md").read_text() == "rules\n"


async def test_auto_mode_headless_refuses_writing_config_through_the_pipeline(workspace: Path, tmp_path: Path) -> None:
    turns = [
        {
            "tool_calls": [
                {"name": "file_write", "arguments": {"path": ".claude/settings.json", "content": '{"permissions": {}}'}}
            ]
        },
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "AGENTS.md", "content": "obey\n"}}]},
        {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "mkdir .monkey"}}]},
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt", "content": "ok\n"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "s.json", turns)
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    results: list[Any] = []
    session = setup.session(
        show=lambda e: results.append(e) if e.type == "tool_result" else None, tell=lambda text, level: None
    )
    await session.open()
    await session.send("go")
    await session.close()
    assert [r.ok for r in results] == [False, False, False, True]
    assert all("needs a person's approval of this exact call" in r.output for r in results[:3])
    assert not (workspace / ".claude").exists() and not (workspace / "AGENTS.md").exists()
    assert not (workspace / ".monkey").exists() and (workspace / "notes.txt").exists()


def test_a_file_an_instruction_file_imports_is_protected_too(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    from monkey.trust import trust

    (workspace / "AGENTS.md").write_text("follow @docs/style.md\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "style.md").write_text("4 spaces\n")
    trust(workspace, monkey_home)
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    found = verdict(setup.policy, "file_edit", {"path": "docs/style.md", "old": "4", "new": "8"}, workspace)
    assert found.question is not None and "instructions" in found.question.person_only
    assert verdict(setup.policy, "file_write", {"path": "docs/other.md", "content": "x"}, workspace).decision
