"""Approval rules, grants and what a person is shown."""

from __future__ import annotations

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import build_request
from monkey.permissions.rules import grant_for, Rule, RuleError


def shell(command: str) -> dict:
    return {"command": command}


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("git status", True),
        ("git status --short", True),
        ("git  status", True),
        ("git statusx", False),
        ("git", False),
        ("git status; rm -rf x", False),
        ("git status && rm -rf x", False),
        ("git status | sh", False),
        ("git status $(rm -rf x)", False),
        ("git status `rm -rf x`", False),
        ("git status\nrm -rf x", False),
        ("git status > out", False),
        ("gitx status", False),
        ("git status && git status --short", True),  # every command allowed: the line is
        ("cd sub && git status", False),
        ("/usr/bin/git status", True),
        ("env LANG=C git status", True),
    ],
)
def test_allow_prefix_never_covers_shell_syntax(command: str, allowed: bool) -> None:
    policy = ApprovalPolicy.from_strings(allow=["shell_execute(git status)"], read_only=False)
    decision = policy.check("shell_execute", shell(command))
    assert (decision is not None and decision.approved) is allowed


@pytest.mark.parametrize(
    "command",
    ["rm -rf x", "ls; rm -rf x", "ls && rm x", "echo $(rm x)", "FOO=1 rm x", "ls | rm x", "(rm x)"],
)
def test_deny_rules_look_inside_shell_lines(command: str) -> None:
    policy = ApprovalPolicy.from_strings(deny=["shell_execute(rm)"], no_approval=True)
    decision = policy.check("shell_execute", shell(command))
    assert decision is not None and not decision.approved and decision.by == "rule"


def test_deny_beats_no_approval_and_allow() -> None:
    policy = ApprovalPolicy.from_strings(allow=["file_delete"], deny=["file_delete"], no_approval=True)
    decision = policy.check("file_delete", {"path": "a"})
    assert decision is not None and not decision.approved


def test_path_rules() -> None:
    policy = ApprovalPolicy.from_strings(allow=["file_write(docs/**)"])
    assert policy.check("file_write", {"path": "docs/a/b.md"})
    assert policy.check("file_write", {"path": "./docs/a.md"})
    assert policy.check("file_write", {"path": "src/a.py"}) is None
    assert policy.check("file_edit", {"path": "docs/a.md"}) is None


def test_undecided_without_rules() -> None:
    assert ApprovalPolicy().check("file_write", {"path": "a"}) is None


def test_no_approval_approves() -> None:
    decision = ApprovalPolicy(mode="auto").check("shell_execute", shell("make"))
    assert decision is not None and decision.approved and decision.by == "policy"
    chain = ApprovalPolicy(mode="auto").check("shell_execute", shell("cd sub && make"))
    assert chain is not None and chain.exact_line, "a line whose every command is known runs in --no-approval"
    hidden = ApprovalPolicy(mode="auto").check("shell_execute", shell("echo $(id) > out"))
    assert hidden is not None and not hidden.exact_line, "--no-approval never vouches for a line it cannot read"


def test_session_grants() -> None:
    policy = ApprovalPolicy()
    what = policy.remember("shell_execute", shell("pytest -x tests"))
    assert "pytest" in what
    assert policy.check("shell_execute", shell("pytest tests/unit"))
    assert policy.check("shell_execute", shell("pytest; rm x")) is None
    assert policy.check("shell_execute", shell("python x.py")) is None
    policy.remember("shell_execute", shell("ls | wc -l"))  # one prefix per simple command: ls, wc
    granted = policy.check("shell_execute", shell("ls | wc -l"))
    assert granted is not None and granted.exact_line
    assert policy.check("shell_execute", shell("ls -a | wc -c"))
    assert policy.check("shell_execute", shell("ls | rm x")) is None
    policy.remember("shell_execute", shell("ls > listing.txt"))  # unreadable to the parser: that exact line only
    assert policy.check("shell_execute", shell("ls > listing.txt"))
    assert policy.check("shell_execute", shell("ls > other.txt")) is None
    policy.remember("file_edit", {"path": "a.py"})
    assert policy.check("file_edit", {"path": "b.py"})
    key = next(iter(policy.grants))
    policy.revoke(key)
    assert key not in policy.grants


def test_grant_descriptions() -> None:
    assert grant_for("shell_execute", shell("git commit -m x"))[1] == "commands starting with `git commit`"
    assert grant_for("shell_execute", shell("ls -la"))[1] == "commands starting with `ls`"
    assert (
        grant_for("shell_execute", shell("git status && git diff x"))[1]
        == "commands starting with `git status`, `git diff`"
    )
    assert (
        grant_for("shell_execute", shell("a > out"))[1] == "this exact command line only (writes its output to out (>))"
    )


def test_rule_parsing() -> None:
    assert Rule.parse("file_edit") == Rule("file_edit")
    assert Rule.parse(" shell_execute( git status ) ") == Rule("shell_execute", "git status")
    with pytest.raises(RuleError):
        Rule.parse("not a rule(")


def test_request_shows_hidden_characters() -> None:
    request = build_request("c1", "shell_execute", shell("echo hi\x1b[2K\u202erm -rf ~"), "")
    assert "\x1b" not in request.summary and "\\x1b" in request.summary and "\\u202e" in request.summary
    text = " ".join(request.warnings)
    assert "escape" in text and "right-to-left override" in text and "shell" in text
