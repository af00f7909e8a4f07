"""The ``acp:NAME`` backend when the agent misbehaves: garbage on stdout, a 10 MB message, a prompt's
answer before its updates, silence, a crash mid-turn, requests monkey does not know, reads a deny rule
covers and missing files, a shell command it asks for, and a turn cancelled while a permission waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from monkey.agent.loop import Agent
from monkey.events import ApprovalRequested, TextDelta
from monkey.permissions.policy import ApprovalPolicy
from tests.support.procs import pids_running
from tests.support.acp_agents import acp_backend, fake_acp_exe, got, run_turns
from tests.support.external import Waits, cancel_when_asked


def _text(events: list) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _error(events: list) -> str:
    errors = [e for e in events if e.type == "error"]
    assert errors, events
    return errors[0].message


def _gone(backend) -> bool:  # type: ignore[no-untyped-def]
    proc = backend.proc
    return proc is not None and proc.returncode is not None


def test_garbage_ends_the_turn_with_a_clear_error_and_keeps_what_came(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    (events,) = run_turns(Agent(backend=backend, workspace=workspace), "garbage")
    assert _text(events) == "before the garbage"
    assert "sent something that is not a JSON-RPC message ('this is not json at all')" in _error(events)
    assert _gone(backend)


def test_a_10_mb_line_ends_the_turn(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log", max_line=1 << 20)
    (events,) = run_turns(Agent(backend=backend, workspace=workspace), "huge")
    assert _text(events) == "before the huge line"
    assert "over monkey's limit of 1048576" in _error(events) and _gone(backend)


def test_silence_is_stopped_by_the_idle_watchdog(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log", idle_timeout=1.0)
    (events,) = run_turns(Agent(backend=backend, workspace=workspace), "silent")
    assert _text(events) == "then nothing"
    assert "printed nothing for 1 s and was stopped" in _error(events) and _gone(backend)


def test_a_crash_mid_turn_says_why_and_the_next_turn_starts_a_new_agent(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, log)
    crashed, again = run_turns(Agent(backend=backend, workspace=workspace), "crash", "text")
    assert _text(crashed) == "about to crash"
    assert "exited with status 3: fake agent: segfault in the model" in _error(crashed)
    assert _text(again) == "hello from the agent" and again[-1].reason == "completed"
    assert [m.get("method") for m in got(log)].count("initialize") == 2


def test_a_new_agent_is_given_the_conversation_so_far(workspace: Path, tmp_path: Path) -> None:
    """The agent that replaces a crashed one (as one started for a resumed session) has none of the
    conversation: its first prompt carries it, before the person's message."""
    log = tmp_path / "log"
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, log)
    first, _crashed, again = run_turns(Agent(backend=backend, workspace=workspace), "text", "crash", "text")
    prompts = [m["params"]["prompt"] for m in got(log) if m.get("method") == "session/prompt"]
    assert len(prompts) == 3 and len(prompts[0]) == 1 and len(prompts[1]) == 1  # one process: its own context
    history, latest = prompts[2]
    assert (
        history["text"].startswith("The conversation so far") and "assistant: hello from the agent" in history["text"]
    )
    assert latest["text"] == "crash\n\ntext" and _text(again) == "hello from the agent"


def test_an_answer_before_its_updates_ends_the_turn_and_loses_nothing(workspace: Path, tmp_path: Path) -> None:
    """An update the agent sends right behind its answer is shown in the turn when it arrived with the
    answer (the SDK waits for the updates it has read), else counted as late: never lost, never twice."""
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    agent = Agent(backend=backend, workspace=workspace)

    async def drive() -> list:
        events = [e async for e in agent.run("early")]
        while backend.client is not None and backend.client.late + _text(events).count("after the answer") == 0:
            await asyncio.sleep(0.01)  # until the update sent after the answer was read
        await backend.aclose()
        return events

    early = asyncio.run(asyncio.wait_for(drive(), 60))
    assert early[-1].reason == "completed"
    assert backend.client is not None and backend.client.late + _text(early).count("after the answer") == 1


def test_requests_monkey_does_not_know_get_method_not_found(workspace: Path, tmp_path: Path) -> None:
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    (events,) = run_turns(Agent(backend=backend, workspace=workspace), "unknown")
    assert _text(events) == "codes -32601 -32601 -32601"


def test_reads_pass_the_deny_rules_and_a_missing_file_is_answered_per_agent(workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\n")
    (workspace / "secret.env").write_text("KEY=1\n")
    exe = fake_acp_exe(tmp_path / "bin")
    policy = ApprovalPolicy.from_strings(deny=["file_read(secret.env)"])
    backend = acp_backend(exe, workspace, tmp_path / "log")
    ok, denied, missing = run_turns(
        Agent(backend=backend, workspace=workspace, policy=policy),
        "read notes.txt",
        "read secret.env",
        "read nothere.txt",
    )
    assert _text(ok) == "content: 'one\\ntwo\\n'"
    assert _text(denied) == "error -32000"
    assert _text(missing) == "error -32002"  # the spec's "resource not found"
    empty = acp_backend(exe, workspace, tmp_path / "log", missing_file="empty")  # what Gemini CLI needs
    (events,) = run_turns(Agent(backend=empty, workspace=workspace), "read nothere.txt")
    assert _text(events) == "content: ''"


def test_the_agents_own_command_is_decided_as_a_shell_line(workspace: Path, tmp_path: Path) -> None:
    exe = fake_acp_exe(tmp_path / "bin")
    refused = acp_backend(exe, workspace, tmp_path / "log")
    (events,) = run_turns(Agent(backend=refused, workspace=workspace), "shell touch made.txt")
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    assert asked.name == "shell_execute" and asked.arguments == {"command": "touch made.txt"}
    assert _text(events) == "permission: no" and not (workspace / "made.txt").exists()
    allowed = acp_backend(exe, workspace, tmp_path / "log")
    policy = ApprovalPolicy.from_strings(allow=["shell_execute(touch *)"])
    (events,) = run_turns(Agent(backend=allowed, workspace=workspace, policy=policy), "shell touch made.txt")
    assert _text(events) == "permission: yes" and (workspace / "made.txt").exists()
    assert allowed.client is not None and allowed.client.answers == ["allow_once"]  # never "always"


def test_cancel_while_a_permission_waits_answers_cancelled_and_tells_the_agent(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    exe = fake_acp_exe(tmp_path / "bin")
    backend = acp_backend(exe, workspace, log)
    approver = Waits()
    agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=ApprovalPolicy())
    events = cancel_when_asked(agent, approver, "shell touch made.txt")
    assert events[-1].type == "turn_completed" and events[-1].reason == "cancelled"
    sent = got(log)
    (answer,) = [m for m in sent if "result" in m and "outcome" in m["result"]]
    assert answer["result"]["outcome"] == {"outcome": "cancelled"}
    methods = [m.get("method") for m in sent]
    # the agent hears of the cancel before its question is answered as cancelled (told the other way round,
    # it may end its prompt at once and never be sent the cancel)
    assert "session/cancel" in methods[: sent.index(answer)], methods
    assert not (workspace / "made.txt").exists()
    asyncio.run(backend.aclose())
    assert _gone(backend) and pids_running(str(exe)) == []  # closing the session leaves no process


def test_for_the_session_is_monkeys_grant_and_the_agent_only_hears_allow_once(workspace: Path, tmp_path: Path) -> None:
    """A person allows the agent's command for the session: monkey keeps the grant and decides the next
    one itself (nobody asked); the agent is told "allow once" both times, never its "always"."""
    from monkey.permissions.requests import ApprovalRequest, Decision

    class ForTheSession:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def decide(self, request: ApprovalRequest) -> Decision:
            self.asked.append(request.tool)
            return Decision(True, scope="session")

    person = ForTheSession()
    backend = acp_backend(fake_acp_exe(tmp_path / "bin"), workspace, tmp_path / "log")
    agent = Agent(backend=backend, workspace=workspace, approver=person, policy=ApprovalPolicy())
    first, second = run_turns(agent, "shell touch made.txt", "shell touch made.txt")
    assert person.asked == ["shell_execute"]
    assert [e.by for e in second if e.type == "approval_resolved"] in ([], ["session"])
    assert _text(second) == "permission: yes"
    assert backend.client is not None and backend.client.answers == ["allow_once", "allow_once"]
