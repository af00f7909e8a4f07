"""shell_execute with real processes: streaming, limits, process groups, environment."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from monkey.tools.base import ShellSettings, ToolContext, ToolError
from monkey.tools.shell import ShellExecute

from tests.support.tools import Call

PY = sys.executable


def gone(pid: int) -> bool:
    """Whether a process has ended (a zombie nobody reaped counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


async def wait_for_text(outputs: list[tuple[str, str]], pattern: str, timeout: float = 5.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, "".join(text for _, text in outputs))
        if m:
            return m
        await asyncio.sleep(0.01)
    raise AssertionError(f"{pattern!r} never appeared in {outputs!r}")


@pytest.fixture
def approved(ctx: ToolContext) -> ToolContext:
    """The context of a call whose exact shell line a person approved."""
    return replace(ctx, shell_line_approved=True)


async def test_plain_command_runs_in_the_workspace(ws: Path, call: Call, outputs: list) -> None:
    out = await call("shell_execute", command="pwd")
    assert out.output == f"{ws.resolve()}\n[exit code 0]"
    assert outputs == [("stdout", f"{ws.resolve()}\n")]


async def test_arguments_are_not_interpreted(ws: Path, call: Call) -> None:
    out = await call("shell_execute", command=f"{PY} -c 'import sys; print(sys.argv[1:])' 'a b' \\$HOME")
    assert out.output == "['a b', '$HOME']\n[exit code 0]"


async def test_output_streams_as_it_arrives(call: Call, outputs: list) -> None:
    code = "import time; print('first', flush=True); time.sleep(0.5); print('second')"
    task = asyncio.create_task(call("shell_execute", command=f'{PY} -c "{code}"'))
    await wait_for_text(outputs, "first")
    assert not task.done(), "the first line arrived while the command was still running"
    out = await task
    assert out.output == "first\nsecond\n[exit code 0]"


async def test_stderr_is_streamed_and_kept(call: Call, outputs: list) -> None:
    out = await call("shell_execute", command=f"{PY} -c \"import sys; sys.stderr.write('oops\\n')\"")
    assert ("stderr", "oops\n") in outputs
    assert out.output == "oops\n[exit code 0]"


async def test_utf8_split_across_chunks(call: Call) -> None:
    code = "import sys,time; o=sys.stdout.buffer; o.write(b'caf\\xc3'); o.flush(); time.sleep(0.1); o.write(b'\\xa9\\xff\\n')"
    out = await call("shell_execute", command=f'{PY} -c "{code}"')
    assert out.output == "caf\u00e9\ufffd\n[exit code 0]"


async def test_non_zero_exit_is_an_error_with_output(call: Call) -> None:
    with pytest.raises(ToolError) as err:
        await call("shell_execute", command=f"{PY} -c \"print('half'); raise SystemExit(3)\"")
    assert str(err.value) == "half\n[exit code 3]"


async def test_command_not_found(call: Call) -> None:
    with pytest.raises(ToolError, match="^command not found: definitely-not-a-command-xyz$"):
        await call("shell_execute", command="definitely-not-a-command-xyz --help")


async def test_builtins_are_explained(call: Call) -> None:
    with pytest.raises(ToolError, match="cd is a shell builtin"):
        await call("shell_execute", command="cd src")


async def test_stdin_is_dev_null(call: Call) -> None:
    out = await call("shell_execute", command="cat", timeout=5)
    assert out.output == "[exit code 0]"  # a pipe left open would have kept cat reading until the timeout


async def test_environment_is_scrubbed(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_API_KEY", "s3cret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    out = (await call("shell_execute", command="env")).output
    assert "s3cret-value" not in out and "FOO_API_KEY" not in out and "GITHUB_TOKEN" not in out
    assert "HARMLESS_SETTING=visible" in out and "PATH=" in out


async def test_shell_syntax_needs_an_approved_line(call: Call, approved: ToolContext) -> None:
    with pytest.raises(ToolError) as err:
        await call("shell_execute", command="echo hi | tr a-z A-Z")
    message = str(err.value)
    assert "| (pipe)" in message and "approved this exact line" in message and "one at a time" in message
    out = await call("shell_execute", approved, command="echo hi | tr a-z A-Z")
    assert out.output == "HI\n[exit code 0]"


async def test_timeout_stops_the_whole_group(call: Call, approved: ToolContext, outputs: list) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as err:
        await call("shell_execute", approved, command="sleep 100 & echo child=$!; sleep 100", timeout=0.5)
    assert time.monotonic() - started < 50  # stopped, not waited for (the sleeps take 100 s)
    assert "[timed out after 0.5 s; the command's processes were stopped]" in str(err.value)
    assert "child=" in str(err.value)
    child = int((await wait_for_text(outputs, r"child=(\d+)")).group(1))
    assert gone(child)


async def test_timeout_of_a_plain_command(call: Call) -> None:
    with pytest.raises(ToolError, match=r"timed out after 0.3 s"):
        await call("shell_execute", command="sleep 30", timeout=0.3)


async def test_term_ignoring_process_gets_killed(call: Call, approved: ToolContext, outputs: list) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out"):
        await call("shell_execute", approved, command="trap '' TERM; echo pid=$$; sleep 100", timeout=0.3)
    assert time.monotonic() - started < 50  # stopped, not waited for (the sleeps take 100 s)
    assert gone(int((await wait_for_text(outputs, r"pid=(\d+)")).group(1)))


async def test_timeout_is_capped_by_settings(call: Call, ctx: ToolContext) -> None:
    short = replace(ctx, shell=ShellSettings(timeout=10, max_timeout=0.3, kill_grace=0.2))
    with pytest.raises(ToolError, match=r"timed out after 0.3 s"):
        await call("shell_execute", short, command="sleep 30", timeout=500)


async def test_cancellation_kills_the_group_before_propagating(
    call: Call, approved: ToolContext, outputs: list
) -> None:
    task = asyncio.create_task(
        call("shell_execute", approved, command="sleep 100 & echo child=$! leader=$$; sleep 100", timeout=60)
    )
    m = await wait_for_text(outputs, r"child=(\d+) leader=(\d+)")
    child, leader = int(m.group(1)), int(m.group(2))
    assert not gone(child) and not gone(leader)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(child) and gone(leader)


async def test_background_leftovers_are_stopped_when_the_command_ends(
    call: Call, approved: ToolContext, outputs: list
) -> None:
    started = time.monotonic()
    out = await call("shell_execute", approved, command="sleep 100 & echo child=$!")
    assert time.monotonic() - started < 50  # stopped, not waited for (the sleeps take 100 s)
    assert out.output.endswith("[exit code 0]")
    assert gone(int((await wait_for_text(outputs, r"child=(\d+)")).group(1)))


@pytest.mark.subprocess
async def test_killed_by_a_signal(call: Call, approved: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"\[killed by SIGKILL\]"):
        await call("shell_execute", approved, command="kill -9 $$")


async def test_output_is_capped_but_drained(call: Call, ctx: ToolContext, outputs: list) -> None:
    small = replace(ctx, shell=ShellSettings(output_limit=1000, kill_grace=0.2))
    code = "import sys; sys.stdout.write('H' * 600 + 'x' * 2_000_000 + 'T' * 600)"
    out = (await call("shell_execute", small, command=f'{PY} -c "{code}"', timeout=30)).output
    assert out.startswith("H" * 500 + "\n[... 2000200 characters of output cut ...]\n")
    assert out.endswith("T" * 500 + "\n[exit code 0]")
    assert sum(len(text) for _, text in outputs) == 2_001_200


def test_shell_tool_flags(ctx: ToolContext) -> None:
    tool = ShellExecute()
    assert tool.dangerous and not tool.read_only
    assert tool.touched_paths(tool.parse({"command": "ls"}), ctx) is None
    with pytest.raises(ToolError, match="invalid arguments"):
        tool.parse({"command": "ls", "timeout": 0})
    assert tool.argv(tool.parse({"command": "ls -l 'a b'"}), ctx) == ["ls", "-l", "a b"]
    assert tool.argv(tool.parse({"command": "ls | wc"}), replace(ctx, shell_line_approved=True)) == [
        "/bin/sh", "-c", "ls | wc"
    ]  # fmt: skip
    assert os.environ.get("PATH")
