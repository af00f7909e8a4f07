"""Shell expansions that run code: a line whose bash evaluation may run a command the parser cannot
see (arithmetic on a variable's value, ``${x@P}``, ``${!x}``, subscripts, ``[[ -eq ]]``, builtins
that take variable names, a command named by a variable), at any depth of ``sh -c`` / ``bash -c``,
is neither read-only nor run by ``auto`` mode without a person.

The classification is checked against what the shells really do: each line runs under bash with
``sh`` being bash too (and under dash with ``sh`` being dash), and whenever its hidden ``touch``
made the marker, the policy must not have allowed the line in any mode.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monkey.permissions.policy import ApprovalPolicy

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed to compare with")

PAYLOADS = {
    "sub": "a='x[$(touch MARK)]'",  # a value whose array subscript runs a command when evaluated
    "prompt": "a='$(touch MARK)'",  # a value that runs a command when expanded as a prompt
    "name": "a='touch MARK'",  # a command to run by name
}
USES = [
    "echo $((a))",
    "echo $[a]",
    "echo $((a + 1))",
    'echo "$((a))"',
    "echo ${a@P}",
    "echo ${!a}",
    "[[ $a -eq 1 ]]",
    "[[ -v $a ]]",
    'test -v "$a"',
    '[ -v "$a" ]',
    'printf -v "$a" %s 1',
    'read "$a" <<< 1',
    "s=abcdef; echo ${s:a}",
    "declare -a arr; echo ${arr[a]}",
    "let a",
    "$a",
    "${a}",
    '"$a"',
    "echo ok && $a",
    "x=$a; $x",
    # harmless: bash runs nothing hidden here
    "echo $a",
    'echo "$a"',
    'printf %d "$a"',
    '[ "$a" -eq 1 ]',
    'test "$a" -eq 1',
    "echo ${a:-x}",
    "echo ${#a}",
    "echo $((1 + 2))",
    'cat "$a"',
]


def _nest(line: str, shells: list[str]) -> str:
    for shell in shells:
        line = f"{shell} -c {shlex.quote(line)}"
    return line


SHELLS = [name for name in ("bash", "dash") if shutil.which(name)]
"""What ``/bin/sh`` may be: bash (some systems), dash (Debian's)."""


def _bash_runs_it(line: str, where: Path, shell: str = "bash") -> bool:
    """Whether ``line``, run by ``shell`` with ``sh`` being that shell too, runs its hidden ``touch``."""
    bin_dir = where / f"bin-{shell}"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "sh").exists():
        (bin_dir / "sh").symlink_to(shutil.which(shell))
    marker = where / "MARK"
    marker.unlink(missing_ok=True)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(where)}
    subprocess.run(
        [shell, "-c", line],
        cwd=where,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=10,
        check=False,
    )
    return marker.exists()


def _allowed_anywhere(line: str, where: Path) -> list[str]:
    """The modes whose policy (the read-only table on, no rules) lets ``line`` run without a person."""
    modes = []
    for mode in ("default", "accept-edits", "auto", "plan"):
        decision = ApprovalPolicy.from_strings(mode=mode).check("shell_execute", {"command": line}, where)
        if decision is not None and decision.approved:
            modes.append(mode)
    return modes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.sampled_from(sorted(PAYLOADS)),
    use=st.sampled_from(USES),
    shells=st.lists(st.sampled_from(["sh", "bash"]), max_size=3),
)
@example(payload="sub", use="echo $((a))", shells=[])
@example(payload="sub", use="echo $((a))", shells=["bash", "sh", "bash"])
@example(payload="prompt", use="echo ${a@P}", shells=["sh"])
@example(payload="name", use="$a", shells=["bash", "bash"])
@example(payload="sub", use='test -v "$a"', shells=[])
@example(payload="sub", use='printf -v "$a" %s 1', shells=["sh"])
def test_a_line_bash_runs_hidden_code_in_is_never_allowed(
    payload: str, use: str, shells: list[str], tmp_path: Path
) -> None:
    line = _nest(f"{PAYLOADS[payload]}; {use}".replace("MARK", str(tmp_path / "MARK")), shells)
    for shell in SHELLS:
        if _bash_runs_it(line, tmp_path, shell):
            assert _allowed_anywhere(line, tmp_path) == [], (shell, line)


@pytest.mark.parametrize(
    "line",
    [
        "a='x[$(touch m)]'; echo $((a))",
        "a='x[$(touch m)]'; echo $[a]",
        "p='$(touch m)'; echo ${p@P}",
        "echo ${arr[$(touch m)]}",
        "echo ${arr[i]}",
        "$cmd args",
        "${x} args",
        "sh -c '$cmd args'",
        "bash -c 'sh -c \"\\$cmd args\"'",
        'sh -c \'bash -c "sh -c \\"\\\\\\$cmd x\\""\'',
        "a='x[$(touch m)]'; let a",
        "[[ $a -gt 1 ]] && echo big",
    ],
)
def test_expansions_that_run_code_are_not_read_only_and_ask_in_auto(line: str) -> None:
    for mode in ("default", "auto", "plan"):
        decision = ApprovalPolicy.from_strings(mode=mode).check("shell_execute", {"command": line})
        assert decision is None or not decision.approved, (mode, line)
    assert ApprovalPolicy.from_strings(mode="auto").check("shell_execute", {"command": line}) is None, line


def test_the_comparison_sees_bash_run_hidden_code(tmp_path: Path) -> None:
    """The oracle itself: bash runs the subscript's command substitution, and the harmless forms run none."""
    mark = tmp_path / "MARK"
    assert _bash_runs_it(f"a='x[$(touch {mark})]'; echo $((a))", tmp_path)
    assert _bash_runs_it(_nest(f"a='x[$(touch {mark})]'; echo $((a))", ["sh", "bash"]), tmp_path)
    assert not _bash_runs_it(f"a='x[$(touch {mark})]'; [ \"$a\" -eq 1 ]", tmp_path)
