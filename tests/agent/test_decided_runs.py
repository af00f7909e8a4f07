"""A shell line is read once: what the permission engine decided on is what runs.

The lines here are where a second reading could differ from the first (backslashes, quotes
inside quotes, quotes glued to words): ``shlex`` and bash agree on them, the tree-sitter
grammar's word text does not always (it drops every backslash of an unquoted word). The
decision is made on the argv :func:`~monkey.tools.command_line.read_line` gives, and the call
pipeline hands that same :class:`~monkey.tools.command_line.ShellLine` to ``shell_execute``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import ApprovalResolved, Event, ToolResult
from monkey.permissions.decide import Call, decide
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.shell_parse import parse_line
from monkey.tools.base import ToolContext
from monkey.tools.command_line import read_line
from monkey.tools.shell import ShellArgs, ShellExecute

EDGE_WORDS = [
    r"a\\b",  # an escaped backslash: bash passes a\b
    r"a\\\\b",  # two: a\\b
    r'"x\"y"',  # a quote escaped inside double quotes: x"y
    r'"x\\y"',  # a backslash escaped inside double quotes: x\y
    r'"x\y"',  # a backslash before a plain character inside double quotes stays: x\y
    r"'it'\''s'",  # single quotes glued to an escaped quote: it's
    r"a\ b",  # an escaped space: one word
    r"''",  # an empty word
    r'"a"b' "'c'",  # quotes glued together: abc
    r"\-n",  # an escaped dash
]

BASH = shutil.which("bash")


def bash_argv(line: str) -> list[str]:
    """The argv bash gives ``line`` (its words, as the program would receive them)."""
    assert BASH is not None
    out = subprocess.run(
        [BASH, "-c", f'for w in {line}; do printf "%s\\0" "$w"; done'], capture_output=True, check=True
    ).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.parametrize("word", EDGE_WORDS)
def test_the_decided_argv_is_the_argv_that_runs_and_what_bash_reads(word: str) -> None:
    line = f"printf %s: {word}"
    read = read_line(line)
    assert read.construct is None and read.argv is not None  # a plain line: it runs with no shell
    decided = parse_line(line).commands
    assert decided == [list(read.argv)]  # the engine's commands are built from the argv that runs
    ctx = ToolContext(workspace=Path("/"), line=read)
    assert ShellExecute().argv(ShellArgs(command=line), ctx) == list(read.argv)
    if BASH is not None:
        assert list(read.argv) == ["printf", "%s:", *bash_argv(word)]


def test_the_verdict_carries_the_line_it_decided_on(tmp_path: Path) -> None:
    line = r"printf %s a\\b"
    verdict = decide(
        ApprovalPolicy.from_strings(allow=["shell_execute(printf)"]),
        Call(id="c1", tool="shell_execute", arguments={"command": line}, workspace=tmp_path),
    )
    assert verdict.decision is not None and verdict.decision.approved
    assert verdict.line is read_line(line) and verdict.line.argv == ("printf", "%s", "a\\b")


def test_a_rule_for_one_word_does_not_allow_a_line_that_runs_another(tmp_path: Path) -> None:
    """``touch ab`` is allowed; ``touch a\\\\b`` makes ``a\\b``, so the rule does not cover it
    (read with the grammar's word text it would have looked like ``ab``)."""
    policy = ApprovalPolicy.from_strings(allow=["shell_execute(touch ab)"])
    allowed = decide(policy, Call(id="c1", tool="shell_execute", arguments={"command": "touch ab"}, workspace=tmp_path))
    assert allowed.decision is not None and allowed.decision.approved
    other = decide(
        policy, Call(id="c2", tool="shell_execute", arguments={"command": r"touch a\\b"}, workspace=tmp_path)
    )
    assert other.decision is None and other.question is not None  # a person is asked


async def test_what_the_agent_runs_is_what_was_decided(workspace: Path) -> None:
    lines = [f"printf %s: {word}" for word in EDGE_WORDS]
    script = Script(
        turns=[
            ScriptTurn(tool_calls=[ScriptCall(name="shell_execute", arguments={"command": line}, id=f"c{i}")])
            for i, line in enumerate(lines)
        ]
        + [ScriptTurn(text="done")]
    )
    agent = Agent(
        backend=ScriptedBackend(script),
        workspace=workspace,
        policy=ApprovalPolicy.from_strings(allow=["shell_execute(printf)"]),
    )
    agent.options.max_iterations = len(lines) + 2
    events: list[Event] = [e async for e in agent.run("print them")]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    resolved = {e.call_id: e for e in events if isinstance(e, ApprovalResolved)}
    for i, line in enumerate(lines):
        assert resolved[f"c{i}"].decision == "approved", line
        decided = parse_line(line).commands[0]
        printed = results[f"c{i}"].output.removesuffix("\n[exit code 0]")
        assert printed == "".join(f"{w}:" for w in decided[2:]), line


def test_a_line_that_cannot_be_split_is_refused_with_why(tmp_path: Path) -> None:
    read = read_line("printf 'unbalanced")
    assert read.argv is None and "cannot parse" in read.error
    with pytest.raises(Exception, match="cannot parse the command line"):
        ShellExecute().argv(ShellArgs(command="printf 'unbalanced"), ToolContext(workspace=tmp_path, line=read))
