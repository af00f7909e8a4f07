"""``decide``: the one verdict on a call, from every source of a decision at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from monkey.permissions.decide import Call, decide, settle
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision


@dataclass
class Hook:
    decision: Literal["", "allow", "deny", "ask"]
    reason: str = ""


def call(tool: str, ws: Path, **kw) -> Call:  # type: ignore[no-untyped-def]
    arguments = kw.pop("arguments", {"path": "a.py"} if tool != "shell_execute" else {"command": "make"})
    return Call(id="c1", tool=tool, arguments=arguments, workspace=ws, **kw)


def test_a_hooks_deny_decides_before_anything(tmp_path: Path) -> None:
    verdict = decide(ApprovalPolicy.from_strings(mode="auto"), call("file_write", tmp_path, hook=Hook("deny", "no")))
    assert verdict.route == "hook" and verdict.decision == Decision(
        approved=False, by="rule", reason="denied by a PreToolUse hook: no"
    )


def test_a_read_meets_only_deny_rules_unless_a_hook_asks(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(deny=["file_read(secret/**)"])
    ok = decide(policy, call("file_read", tmp_path, dangerous=False))
    assert ok.quiet and ok.decision is not None and ok.decision.approved
    denied = decide(policy, call("file_read", tmp_path, dangerous=False, arguments={"path": "secret/k"}))
    assert not denied.quiet and denied.decision is not None and not denied.decision.approved
    asked = decide(policy, call("file_read", tmp_path, dangerous=False, hook=Hook("ask")))
    assert asked.decision is None and asked.question is not None and asked.question.recheck is None


def test_a_hooks_allow_never_beats_a_protected_path_and_its_ask_beats_a_rule(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(allow=["file_write"])
    protected = decide(
        policy,
        call("file_write", tmp_path, hook=Hook("allow"), protects=lambda: "the MCP tool changed since it was approved"),
    )
    assert protected.decision is None and protected.question is not None
    assert protected.question.person_only and protected.question.grant == "" and protected.question.rules == []
    allowed = decide(ApprovalPolicy(), call("file_write", tmp_path, hook=Hook("allow")))
    assert allowed.decision is not None and allowed.decision.reason == "allowed by a PreToolUse hook"
    asked = decide(policy, call("file_write", tmp_path, hook=Hook("ask")))
    assert asked.decision is None and asked.question is not None


def test_a_line_the_person_typed_runs_unless_a_rule_denies_it(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(deny=["shell_execute(rm)"])
    typed = decide(policy, call("shell_execute", tmp_path, arguments={"command": "make | tee log"}, by_person=True))
    assert typed.decision is not None and typed.decision.by == "user" and typed.decision.exact_line
    denied = decide(policy, call("shell_execute", tmp_path, arguments={"command": "rm -rf x"}, by_person=True))
    assert denied.decision is not None and not denied.decision.approved


def test_an_answer_for_a_protected_or_oversized_call_holds_once(tmp_path: Path) -> None:
    policy = ApprovalPolicy()
    verdict = decide(policy, call("file_write", tmp_path, oversized=("big.bin: 90 MB",)))
    assert verdict.question is not None and "big.bin: 90 MB" in verdict.question.person_only
    once = settle(policy, verdict, Decision(approved=True, scope="session"))
    assert once.scope == "once" and not policy.grants
    refused = settle(policy, verdict, Decision(approved=False, reason="no"))
    assert refused.reason == "big.bin: 90 MB; no"
    plain = decide(policy, call("file_write", tmp_path))
    settle(policy, plain, Decision(approved=True, scope="session"))
    assert "file_write" in policy.grants  # "for the session" became a grant


def test_an_external_agents_command_is_decided_as_where_there_is_no_sandbox(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_strings(mode="auto")
    own = decide(policy, call("shell_execute", tmp_path))
    assert own.decision is not None and own.decision.approved  # auto mode, in monkey's sandbox
    theirs = decide(policy, call("shell_execute", tmp_path, unsandboxed=True))
    assert theirs.decision is None and theirs.question is not None and theirs.question.no_sandbox
