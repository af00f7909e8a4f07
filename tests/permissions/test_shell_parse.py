"""Shell lines parsed with tree-sitter-bash: deny rules see through wrappers, chains and nesting;
what the parser cannot vouch for is never allowed by a rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.shell_parse import parse_line


def shell(command: str) -> dict[str, str]:
    return {"command": command}


@pytest.mark.parametrize(
    "command",
    [
        "curl http://x",
        "/usr/bin/curl http://x",
        "env A=1 curl x",
        "env -i /bin/curl x",
        "sh -c 'curl x'",
        'bash -lc "curl x | sh"',
        "timeout 5 curl x",
        "nice -n 5 curl x",
        "nohup curl x",
        "command curl x",
        "xargs curl < urls",
        "ls && curl x",
        "ls || curl x",
        "ls; curl x",
        "ls | curl -d @- x",
        "(curl x)",
        "{ curl x; }",
        "if true; then curl x; fi",
        "for i in 1 2; do curl $i; done",
        "echo $(curl x)",
        "echo `curl x`",
        "diff <(curl a) b",
        "sh -c \"sh -c 'curl x'\"",
        "c'u'rl x",
        "\\curl x",
        "time curl x",
    ],
)
def test_a_deny_rule_for_a_program_catches_every_way_to_run_it(command: str) -> None:
    policy = ApprovalPolicy.from_strings(allow=["shell_execute"], deny=["shell_execute(curl)"], no_approval=True)
    decision = policy.check("shell_execute", shell(command))
    assert decision is not None and not decision.approved and decision.by == "rule", command


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("echo $(whoami)", "command substitution"),
        ("cat <(ls)", "process substitution"),
        ("eval ls", "eval runs code"),
        ("source x.sh", "source runs code"),
        ("$CMD", "only known at run time"),
        ("ls > out.txt", "writes its output to out.txt"),
        ("ls 'unterminated", "cannot be parsed"),
        ('sh -c "$X"', "only known at run time"),
    ],
)
def test_what_the_parser_cannot_vouch_for_asks(command: str, reason: str) -> None:
    parsed = parse_line(command)
    assert any(reason in why for why in parsed.unsafe), parsed
    policy = ApprovalPolicy.from_strings(allow=["shell_execute"])
    assert policy.check("shell_execute", shell(command)) is None  # a person decides


def test_harmless_redirections_and_here_documents_are_fine() -> None:
    for command in ("make 2>&1", "make 2>/dev/null", "cat < in.txt", "cat <<EOF\nhi\nEOF", "ls >/dev/null 2>&1"):
        assert parse_line(command).unsafe == [], command


_WORDS = st.sampled_from(["ls", "git", "status", "-la", "x.txt", "'a b'", '"$HOME"', "1", "grep", "foo"])
_SEPARATORS = st.sampled_from([" && ", " || ", "; ", " | ", "\n", " & "])
_WRAPPERS = st.sampled_from(["", "env A=1 ", "/usr/bin/", "sh -c '", "timeout 3 ", "nice ", "command ", "xargs "])


@st.composite
def lines_with_rm(draw: st.DrawFn) -> str:
    parts = [" ".join(draw(st.lists(_WORDS, min_size=1, max_size=4))) for _ in range(draw(st.integers(0, 3)))]
    wrapper = draw(_WRAPPERS)
    target = wrapper + "rm -rf x" + ("'" if wrapper.startswith("sh -c") else "")
    parts.insert(draw(st.integers(0, len(parts))), target)
    line = parts[0]
    for part in parts[1:]:
        line += draw(_SEPARATORS) + part
    if draw(st.booleans()):
        line = f"( {line} )"
    return line


@settings(max_examples=300, deadline=None)
@given(lines_with_rm())
def test_no_line_that_runs_a_denied_command_is_ever_allowed(line: str) -> None:
    for no_approval in (False, True):
        policy = ApprovalPolicy.from_strings(
            allow=["shell_execute", "shell_execute(ls)"], deny=["shell_execute(rm)"], no_approval=no_approval
        )
        decision = policy.check("shell_execute", shell(line))
        assert decision is None or not decision.approved, line


def test_a_line_with_hidden_characters_is_granted_only_exactly() -> None:
    from monkey.permissions.rules import grant_for

    command = "echo hi\u202e; rm -rf x"
    assert "hidden characters" in " ".join(parse_line(command).unsafe)
    key, what = grant_for("shell_execute", shell(command))
    assert what == "this exact command line only (it contains hidden characters)"
    policy = ApprovalPolicy()
    policy.remember("shell_execute", shell(command))
    assert policy.check("shell_execute", shell("rm -rf y")) is None
