"""needs_shell, split_command and scrub_env: what runs without a shell, and what it sees."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from monkey.tools.base import ToolError
from monkey.tools.shell import needs_shell, scrub_env, split_command


@pytest.mark.parametrize(
    ("command", "construct"),
    [
        ("git status", None),
        ("git log --oneline -n 5 HEAD~1", None),
        ("pytest -q 'tests/test a.py' -k \"not slow\"", None),
        ("echo '$HOME' '*' '|' ';' '`x`'", None),
        ("echo a\\ b \\$x", None),
        ("find . -name x -exec rm {} \\;", None),
        ("echo a=b c#d", None),
        ("python -c 'print(1)\nprint(2)'", None),
        ("git status; rm -rf x", ";"),
        ("a && b", "&&"),
        ("a || b", "||"),
        ("sleep 1 &", "&"),
        ("ls | wc", "|"),
        ("echo $(id)", "$("),
        ("echo $HOME", "$"),
        ('echo "$HOME"', "$"),
        ('echo "\\$HOME"', "$"),
        ("echo `id`", "`"),
        ('echo "`id`"', "`"),
        ("ls *.py", "*"),
        ("ls a?.py", "?"),
        ("ls [ab].py", "["),
        ("cat < x", "<"),
        ("echo hi > x", ">"),
        ("echo hi 2>&1", ">"),
        ("(cd x)", "("),
        ("ls\nrm x", "newline"),
        ("ls ~/x", "~"),
        ("ls --dir=~/x", "~"),
        ("echo hi # comment", "#"),
        ("FOO=bar make", "assignment"),
        ("echo {a,b}", "brace"),
        ("{ ls; }", "{"),
        ("echo a\rb", "control"),
        ("echo a\\\nb", "continuation"),
    ],
)
def test_needs_shell(command: str, construct: str | None) -> None:
    found = needs_shell(command)
    if construct is None:
        assert found is None, found
    else:
        assert found is not None and construct in found, found


def test_split_command() -> None:
    assert split_command("pytest -q 'a b' \"c d\" e\\ f") == ["pytest", "-q", "a b", "c d", "e f"]
    for bad in ["", "   ", "echo 'unclosed", "''"]:
        with pytest.raises(ToolError):
            split_command(bad)


# Pieces of words: plain characters, quoted text (anything, specials included), escapes,
# and specials on their own, which needs_shell must catch.
_PLAIN = st.text(alphabet="abcXYZ019-_./=:,@%+^!{}]", min_size=1, max_size=6)
_SINGLE = st.text(alphabet='ab $`"\\*|;&<>()#~\n\t{}', max_size=6).map(lambda s: "'" + s + "'")
_DOUBLE = st.text(alphabet="ab '\\*|;&<>()#~{}\t", max_size=6).map(
    lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
)
_ESCAPE = st.sampled_from(["\\ ", "\\'", '\\"', "\\\\", "\\a", "\\*", "\\$", "\\|"])
_SPECIAL = st.sampled_from(list("$`*?[~#|&;<>(){}\r\n") + ["{a,b}", "a=b", "\\\n"])
_PIECE = st.one_of(_PLAIN, _PLAIN, _PLAIN, _SINGLE, _DOUBLE, _ESCAPE, _SPECIAL)
_WORD = st.lists(_PIECE, min_size=1, max_size=4).map("".join)
_COMMAND = st.lists(_WORD, min_size=1, max_size=5).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(words), max_size=len(words)).map(
        lambda seps: "".join(s + w for s, w in zip(seps, words, strict=True))
    )
)


def _sh_argv(command: str) -> list[str]:
    """The words /bin/sh makes of ``command``, printed by its printf builtin."""
    proc = subprocess.run(["/bin/sh", "-c", "printf '%s\\0' " + command], capture_output=True, timeout=10, check=True)
    return proc.stdout.decode().split("\0")[:-1]


@pytest.mark.timeout(600)  # 150 runs of sh: minutes on a loaded machine
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(_COMMAND)
def test_plain_lines_split_the_way_sh_does(command: str) -> None:
    assume(needs_shell(command) is None)
    try:
        argv = split_command("x " + command)[1:]
    except ToolError:
        return  # unbalanced quotes: refused before anything runs
    assert argv == _sh_argv(command)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=8), min_size=1, max_size=4))
def test_shlex_quoted_arguments_are_plain_and_round_trip(args: list[str]) -> None:
    assume(all("\x00" not in a for a in args))
    command = "printf-args " + shlex.join(args)
    if needs_shell(command) is None:
        assert split_command(command)[1:] == args
        assert _sh_argv(shlex.join(args)) == args


def test_sh_argv_helper_sees_json_like_python() -> None:
    proc = subprocess.run(
        ["/bin/sh", "-c", "python3 -c 'import sys,json;print(json.dumps(sys.argv[1:]))' a 'b c' \"d\""],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout) == ["a", "b c", "d"] == _sh_argv("a 'b c' \"d\"")


def test_scrub_env() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "PWD": "/w",
        "GIT_AUTHOR_NAME": "A",
        "VIRTUAL_ENV": "/v",
        "KEYBOARD_LAYOUT": "us",
        "MONKEYPATCH_ME": "fine",
        "FOO_API_KEY": "x",
        "api_key": "x",
        "OPENAI_API_BASE": "x",
        "ANTHROPIC_BASE_URL": "x",
        "AWS_REGION": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "GITHUB_TOKEN": "x",
        "GH_HOST": "x",
        "NPM_TOKEN": "x",
        "MY_SECRET": "x",
        "DB_PASSWORD": "x",
        "MYSQL_PASSWD": "x",
        "GOOGLE_APPLICATION_CREDENTIALS": "x",
        "HF_HOME": "x",
        "HUGGINGFACE_HUB_TOKEN": "x",
        "CLAUDE_CODE_X": "x",
        "CODEX_HOME": "x",
        "MONKEY_HOME": "x",
        "OTEL_EXPORTER": "x",
        "SSH_AUTH_SOCK": "x",
        "HTTP_AUTHORIZATION": "x",
        "STRIPE_SECRET_KEY": "x",
        "PRIVATE_KEY": "x",
        "ACCESS_KEY": "x",
        "MYAPIKEY": "x",
        "DATABASE_URL": "postgres://user:hunter2@db/app",
        "azure_openai_key": "x",
    }
    kept = scrub_env(env)
    assert set(kept) == {
        "PATH", "HOME", "LANG", "TERM", "PWD", "GIT_AUTHOR_NAME", "VIRTUAL_ENV", "KEYBOARD_LAYOUT", "MONKEYPATCH_ME"
    }  # fmt: skip


def test_scrub_env_drops_credentials_by_value_whatever_the_name() -> None:
    env = {
        "NOTES": "deploy with sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
        "CI_HELPER": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "DEPLOY": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "BUCKET": "AKIAIOSFODNN7EXAMPLE",
        "CERT": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----",
        "MIRROR": "see https://user:hunter2@mirror.example/simple",
        "SLACK_HOOK_NOTE": "xoxb-1234567890-abcdefghij",
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "SKETCH": "sk-short",
        "EDITOR_THEME": "ghp",
        "GREETING": "hello world",
        "DOCS": "https://docs.example/page",
    }
    kept = scrub_env(env)
    assert set(kept) == {"PATH", "LANG", "SKETCH", "EDITOR_THEME", "GREETING", "DOCS"}


def test_scrub_env_drops_random_looking_values_of_suspicious_names() -> None:
    env = {
        "DJANGO_SALT": "q8Zr3LmV0xWc7TyB2nKe5HsJ",
        "JWT_SIGNING": "Jm4p9QxR7sT2vW8yZ1aB3cD5eF6g",
        "SESSION_COOKIE_VALUE": "a" * 30,  # COOKIE: dropped by its name anyway
        "DATABASE_NAME": "app_production",  # a word, not a secret
        "SESSION_DIR": "/var/lib/app/sessions/2024",  # a path
        "SEED": "1234567890123456",  # digits only: a number
        "SENTRY_RELEASE": "f3a9c1d27b884e0f9a6b5c4d3e2f1a0b",  # random, but the name is not suspicious
    }
    kept = scrub_env(env)
    assert set(kept) == {"DATABASE_NAME", "SESSION_DIR", "SEED", "SENTRY_RELEASE"}


def test_a_child_sees_no_credential_in_any_variable(workspace, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from monkey.tools.base import ShellSettings, ToolContext
    from monkey.tools.shell import ShellArgs, ShellExecute

    monkeypatch.setenv("BUILD_NOTES", "token ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2")
    ctx = ToolContext(workspace=workspace, call_id="c1", shell=ShellSettings())
    out = asyncio.run(ShellExecute().run(ShellArgs(command="env"), ctx)).output
    assert "ghp_" not in out and "BUILD_NOTES" not in out and "PATH=" in out
