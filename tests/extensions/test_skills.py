"""Skills: SKILL.md folders found, checked and overridden; loaded by the model's ``skill`` tool
or by ``/name``; their ``allowed-tools`` allowed for that turn only."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import pytest

from monkey.extensions.skills import SkillError, discover, parse_skill, tool_rules
from tests.support.cli import init_git_workspace, invoke, write_script
from tests.support.pty import refuse_without_reason


def _skill(base: Path, name: str, front: str, body: str = "Do the thing.\n") -> Path:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}")
    return folder


def test_a_skill_is_read_and_bad_ones_say_why(tmp_path: Path) -> None:
    good = _skill(
        tmp_path,
        "release-notes",
        "name: release-notes\ndescription: Write the release notes.\n"
        "allowed-tools: Bash(git log:*) Read Edit(docs/**)\nuser-invocable: false\n",
    )
    skill = parse_skill(good, "project")
    assert (skill.name, skill.description, skill.user_invocable) == ("release-notes", "Write the release notes.", False)
    assert tool_rules(skill) == (["shell_execute(git log)", "file_read", "file_edit(docs/**)"], [])
    assert skill.body() == "Do the thing."
    cases = {
        "Bad_Name": "name: Bad_Name\ndescription: x\n",
        "other": "name: not-the-folder\ndescription: x\n",
        "nodesc": "name: nodesc\n",
        "long": "name: long\ndescription: " + "x" * 1025 + "\n",
        "yaml": "name: yaml\ndescription: [unclosed\n",
        "list": "- a\n- b\n",
    }
    reasons = {}
    for folder, front in cases.items():
        try:
            parse_skill(_skill(tmp_path, folder, front), "user")
        except SkillError as exc:
            reasons[folder] = str(exc)
    assert set(reasons) == set(cases), "every bad skill is refused"
    assert "lowercase letters" in reasons["Bad_Name"] and "not its folder's name" in reasons["other"]
    assert "description is missing" in reasons["nodesc"] and "longer than 1024" in reasons["long"]
    assert "not valid YAML" in reasons["yaml"] and "mapping" in reasons["list"]
    (tmp_path / "nofront").mkdir()
    (tmp_path / "nofront" / "SKILL.md").write_text("just text\n")
    try:
        parse_skill(tmp_path / "nofront", "user")
    except SkillError as exc:
        assert "no front matter" in str(exc)
    else:
        raise AssertionError("a SKILL.md without front matter is refused")


def test_project_overrides_user_overrides_built_in_and_untrusted_projects_count_not(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    _skill(home / "skills", "review-changes", "name: review-changes\ndescription: the user's own review.\n")
    _skill(home / "skills", "mine", "name: mine\ndescription: only mine.\n")
    _skill(ws / ".claude" / "skills", "mine", "name: mine\ndescription: the project's.\n")
    _skill(ws / ".monkey" / "skills", "broken", "name: Broken\ndescription: x\n")
    trusted = discover(ws, home=home, trusted=True, user_dirs=())
    assert trusted.get("review-changes").description == "the user's own review."  # over the built-in one
    assert trusted.get("mine").description == "the project's." and trusted.get("mine").source == "project"
    assert "broken" not in trusted.by_name and "skill skipped" in trusted.warnings[0]
    untrusted = discover(ws, home=home, trusted=False, user_dirs=())
    assert untrusted.get("mine").description == "only mine." and not untrusted.warnings
    assert discover(ws, home=tmp_path / "none", trusted=False, user_dirs=()).get("review-changes").source == "built-in"


def test_the_prompt_lists_names_and_descriptions_within_its_budget(tmp_path: Path) -> None:
    for n in range(40):
        _skill(tmp_path / "home" / "skills", f"s{n:02d}", f"name: s{n:02d}\ndescription: {'word ' * 30}\n")
    skills = discover(tmp_path, home=tmp_path / "home", trusted=False, user_dirs=())
    prompt = skills.prompt(2000)
    assert len(prompt) <= 2100 and "- s00 — word" in prompt and "more skills are not listed" in prompt
    assert "Do the thing" not in prompt, "bodies are loaded only when asked for"


@given(st.text(max_size=200))
def test_tool_rules_never_crash_and_name_only_known_tools(line: str) -> None:
    from monkey.permissions.rules import Rule
    from monkey.extensions.skills import Skill

    rules, _ = tool_rules(Skill("x", "d", Path("."), "user", (line,)))
    for rule in rules:
        Rule.parse(rule)  # every rule it makes is a valid rule


def _agent(ws: Path, home: Path, script: Path, *extra: str):  # type: ignore[no-untyped-def]
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            *extra,
            "--task",
            "make the file",
        ],
        home=home,
        HOME=str(home),
    )


def test_the_model_loads_a_skill_and_its_tools_are_allowed_for_that_turn_only(
    tmp_path: Path, monkey_home: Path
) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "git-home")
    _skill(
        ws / ".monkey" / "skills",
        "make-file",
        "name: make-file\ndescription: Makes made.txt.\nallowed-tools: Bash(touch:*)\n",
        body="Run `touch made.txt`.\n",
    )
    (ws / ".monkey" / "skills" / "make-file" / "notes.md").write_text("extra notes\n")
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")
    script = write_script(
        tmp_path / "s1.json",
        [
            {"text": "", "tool_calls": [{"name": "skill", "arguments": {"name": "make-file"}}]},
            {"text": "", "tool_calls": [{"name": "skill", "arguments": {"name": "make-file", "file": "notes.md"}}]},
            {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch made.txt"}}]},
            {"text": "made"},
        ],
    )
    run = _agent(ws, monkey_home, script)
    assert run.returncode == 0, run.stderr
    results = run.of_type("tool_result")
    assert "Run `touch made.txt`." in results[0]["output"] and "notes.md" in results[0]["output"]
    assert results[1]["output"] == "extra notes\n"
    assert results[2]["ok"] and (ws / "made.txt").exists()
    assert "allowed by rule shell_execute(touch)" in json.dumps(run.of_type("approval_resolved"))
    # the next turn did not load the skill: the same command is not allowed (headless: refused)
    again = write_script(
        tmp_path / "s2.json",
        [
            {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch again.txt"}}]},
            {"text": "refused"},
        ],
    )
    run = _agent(ws, monkey_home, again, "--continue")
    assert not (ws / "again.txt").exists()
    assert run.of_type("approval_resolved")[0]["decision"] == "denied"


@pytest.mark.pty
def test_in_one_session_the_skills_tools_are_allowed_for_its_turn_then_asked(tmp_path: Path, monkey_home: Path) -> None:
    """Turn 1 runs /make-file (the person's invocation): its command runs without asking;
    turn 2 asks for the same kind of command (the grant ended with the turn)."""
    import pexpect

    from tests.support.pty import spawn_repl

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "git-home")
    _skill(
        ws / ".monkey" / "skills",
        "make-file",
        "name: make-file\ndescription: Makes a file.\nallowed-tools: Bash(touch:*)\n",
        body="Run `touch` on the file named in the arguments.\n",
    )
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch one.txt"}}]},
            {"text": "made one"},
            {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch two.txt"}}]},
            {"text": "made two"},
        ],
    )
    child = spawn_repl(ws, monkey_home, script)
    child.expect_exact("Type a task")
    child.sendline("/make-file one.txt")
    child.expect_exact("allowed for this turn: shell_execute(touch)")
    child.expect_exact("made one")
    assert "allow? [" not in child.before, "the skill's tool ran without asking"
    child.sendline("make two")
    child.expect_exact("allow? [y/a/f/n]")
    refuse_without_reason(child)
    child.expect_exact("›")  # the turn is over: the next prompt
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    assert (ws / "one.txt").exists() and not (ws / "two.txt").exists()


class _PersonApprovesWrites:
    """A person who approves each file write they are shown and refuses every command."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def decide(self, request):  # type: ignore[no-untyped-def]
        from monkey.permissions.requests import Decision

        self.asked.append(request.tool)
        return Decision(approved=request.tool != "shell_execute", reason="the person's answer")


async def test_a_skill_changed_during_the_session_grants_nothing(tmp_path: Path, monkey_home: Path) -> None:
    from monkey.session.setup import SessionRequest, build_agent

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "git-home")
    front = "name: make-file\ndescription: Makes made.txt.\nallowed-tools: Bash(touch:*)\n"
    _skill(ws / ".claude" / "skills", "make-file", front, body="Run `touch made.txt`.\n")
    (monkey_home / "config.toml").write_text("[approvals]\ntrust_project = true\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "file_write",
                        "arguments": {
                            "path": ".claude/skills/make-file/SKILL.md",
                            "content": f"---\n{front}---\nRun `touch made.txt` now.\n",
                        },
                    }
                ]
            },
            {"tool_calls": [{"name": "skill", "arguments": {"name": "make-file"}}]},
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "touch made.txt"}}]},
            {"text": "done"},
        ],
    )
    person = _PersonApprovesWrites()
    setup = build_agent(SessionRequest(workspace=ws, backend="scripted", script=str(script)), person)
    results: list = []  # type: ignore[type-arg]
    session = setup.session(
        show=lambda e: results.append(e) if e.type == "tool_result" else None, tell=lambda text, level: None
    )
    await session.open()
    await session.send("make the file")
    await session.close()
    wrote, loaded, touched = results
    assert wrote.ok and "Run `touch made.txt` now." in loaded.output
    assert "allowed-tools grant nothing" in loaded.output
    assert person.asked == ["file_write", "shell_execute"], "the changed skill's Bash(touch) did not allow it"
    assert not touched.ok and not (ws / "made.txt").exists()


def test_an_unchanged_skill_still_grants_and_a_changed_or_gone_one_not(tmp_path: Path) -> None:
    from monkey.extensions.skills import granted

    folder = _skill(tmp_path, "x", "name: x\ndescription: X.\nallowed-tools: Bash(touch:*)\n")
    skill = parse_skill(folder, "project")
    assert granted(skill) == (["shell_execute(touch)"], "")
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "one more line\n")
    assert granted(skill)[0] == [] and "changed since this session started" in granted(skill)[1]
    (folder / "SKILL.md").unlink()
    assert granted(skill)[0] == []
