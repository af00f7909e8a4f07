"""``!command``: a shell command the person runs goes through the rules, the checkpoint and
the store like the model's, and the model reads it with the next message."""

from __future__ import annotations

from pathlib import Path

from monkey.permissions.policy import ApprovalPolicy
from monkey.agent.loop import Agent
from monkey.agent.person_shell import shell_line
from monkey.backends.external import last_prompt
from monkey.backends.scripted import ScriptTurn
from monkey.checkpoints.guard import CheckpointGuard
from monkey.events import ApprovalResolved, CheckpointCreated, ToolResult, TurnCompleted
from monkey.messages import Message, ModelRequest
from tests.support.agent import agent_for, collect


def shell_agent(workspace: Path, home: Path, **kw) -> Agent:  # type: ignore[no-untyped-def]
    return agent_for(
        workspace, [ScriptTurn(text="I see the file.")], checkpoints=CheckpointGuard(workspace, home=home), **kw
    )


def test_what_counts_as_a_shell_line() -> None:
    assert shell_line("!git status") == "git status"
    assert shell_line("  ! ls -la  ") == "ls -la"
    assert shell_line("!") is None and shell_line("! ") is None
    assert shell_line("why does ! matter") is None and shell_line("/help") is None


async def test_the_person_s_command_is_checkpointed_recorded_and_read_by_the_model(
    workspace: Path, monkey_home: Path
) -> None:
    agent = shell_agent(workspace, monkey_home)
    events = await collect(agent.run_shell("printf 'by hand\\n' > hand.txt && echo made it"))
    assert (workspace / "hand.txt").read_text() == "by hand\n"  # shell syntax runs: the person typed the line
    types = [e.type for e in events]
    assert types[:3] == ["turn_started", "tool_call", "approval_resolved"]
    assert "checkpoint_created" in types and "iteration_started" not in types  # no model call
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert resolved.decision == "approved" and resolved.by == "user"
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.ok and "made it" in result.output
    assert isinstance(events[-1], TurnCompleted) and events[-1].reason == "completed"
    context = agent.messages[-1]
    assert context.role == "user" and "$ printf 'by hand\\n' > hand.txt && echo made it" in context.content
    assert "made it" in context.content and "you did not run it" in context.content

    await collect(agent.run("what did I just make?"))
    sent = agent.backend.requests[-1].messages  # type: ignore[attr-defined]
    assert [m.role for m in sent[-2:]] == ["user", "user"]
    assert "made it" in sent[-2].content and sent[-1].content == "what did I just make?"

    checkpoint = next(e for e in events if isinstance(e, CheckpointCreated))
    from monkey.checkpoints.api import Checkpoints

    undone = Checkpoints(workspace, home=monkey_home).undo()
    assert not (workspace / "hand.txt").exists(), undone
    assert checkpoint.tool == "shell_execute"


async def test_a_deny_rule_holds_for_the_person_s_commands(workspace: Path, monkey_home: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    agent = shell_agent(workspace, monkey_home, policy=ApprovalPolicy.from_strings(deny=["shell_execute(rm)"]))
    events = await collect(agent.run_shell("rm keep.txt"))
    assert (workspace / "keep.txt").exists()
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert resolved.decision == "denied" and resolved.by == "rule"
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.ok and result.output.startswith("denied")
    assert not any(isinstance(e, CheckpointCreated) for e in events)
    assert "it failed" in agent.messages[-1].content


async def test_a_failing_command_says_so_and_a_builtin_is_refused_before_a_checkpoint(
    workspace: Path, monkey_home: Path
) -> None:
    agent = shell_agent(workspace, monkey_home)
    events = await collect(agent.run_shell("sh -c 'echo oops >&2; exit 3'"))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.ok and "oops" in result.output and "[exit code 3]" in result.output
    events = await collect(agent.run_shell("cd sub"))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.ok and "shell builtin" in result.output
    assert not any(isinstance(e, CheckpointCreated) for e in events)


def test_an_external_agent_gets_the_person_s_command_with_the_message() -> None:
    request = ModelRequest(
        system="",
        messages=[
            Message(role="user", content="first"),
            Message(role="assistant", content="done"),
            Message(role="user", content="$ ls\na.txt"),
            Message(role="user", content="what is in a.txt?"),
        ],
        tools=[],
        session_id="s",
    )
    assert last_prompt(request) == "$ ls\na.txt\n\nwhat is in a.txt?"
