"""What decided a call (``approval_resolved.source``, the ``source`` of ``monkey.tool.decision``), as the one
permission engine gives it, and the scrubbing of what telemetry sends."""

from __future__ import annotations

from pathlib import Path

from monkey.extensions.hooks import HookResult
from monkey.permissions.decide import Call, decide, settle, source
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision, HeadlessApprover
from monkey.process import REDACTED, redact, secret_values
from monkey.telemetry.observer import API_KINDS, changed_lines

WRITE = {"path": "a.txt", "content": "x"}


def test_each_way_a_call_is_decided_has_its_source(tmp_path: Path) -> None:
    def of(policy: ApprovalPolicy, tool: str = "file_write", arguments: dict = WRITE, **kw: object) -> str:
        verdict = decide(policy, Call("c", tool, arguments, tmp_path, **kw))  # type: ignore[arg-type]
        assert verdict.decision is not None
        return source(verdict, verdict.decision)

    assert of(ApprovalPolicy.from_strings(allow=["file_write"])) == "rule"
    assert of(ApprovalPolicy.from_strings(deny=["file_write"])) == "rule"
    assert of(ApprovalPolicy(), "file_read", {"path": "a.txt"}, dangerous=False) == "rule"  # a read
    assert of(ApprovalPolicy(mode="accept-edits")) == "mode"
    assert of(ApprovalPolicy(), hook=HookResult(decision="deny", reason="no")) == "hook"
    assert of(ApprovalPolicy(), hook=HookResult(decision="allow")) == "hook"
    assert of(ApprovalPolicy(), "shell_execute", {"command": "make"}, by_person=True) == "person"
    granted = ApprovalPolicy()
    granted.remember("file_write", WRITE)
    assert of(granted) == "person"  # a grant the person gave for the session


async def test_a_person_or_nobody_asked(tmp_path: Path) -> None:
    policy = ApprovalPolicy()
    verdict = decide(policy, Call("c", "file_write", WRITE, tmp_path))
    assert verdict.decision is None and verdict.question is not None
    assert source(verdict, settle(policy, verdict, Decision(approved=True, by="user"))) == "person"
    nobody = await HeadlessApprover().decide(verdict.question)
    assert source(verdict, settle(policy, verdict, nobody)) == "mode"


def test_error_kinds_of_model_calls_are_all_api_errors() -> None:
    from monkey.backends.errors import KINDS

    assert set(KINDS) <= API_KINDS


def test_redact_uses_the_childrens_rules() -> None:
    env = {
        "ANTHROPIC_API_KEY": "a-key-of-sixteen-chars",
        "MY_TOKEN": "tok-9f8e7d6c",
        "MONKEY_HOME": "/home/me/.monkey",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "OTEL_METRIC_EXPORT_INTERVAL": "60000",
        "EDITOR": "vim-editor-x",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer abc123",
    }
    secrets = secret_values(env)
    assert secrets == {"a-key-of-sixteen-chars", "tok-9f8e7d6c", "authorization=Bearer abc123", "Bearer abc123"}
    text = (
        "run with a-key-of-sixteen-chars and tok-9f8e7d6c in /home/me/.monkey via http://127.0.0.1:4318 "
        "ghp_" + "a" * 36 + " https://bob:hunter2@example.com/x vim-editor-x"
    )
    assert redact(text, secrets) == (
        f"run with {REDACTED} and {REDACTED} in /home/me/.monkey via "
        f"http://127.0.0.1:4318 {REDACTED} https://{REDACTED}@example.com/x vim-editor-x"
    )
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"cat <<EOF\n{key}\nEOF") == f"cat <<EOF\n{REDACTED}\nEOF"
    assert redact("nothing to hide here") == "nothing to hide here"


def test_changed_lines_leave_the_headers_out() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-old\n+new\n+more\n context\n"
    assert changed_lines(diff) == (2, 1)
