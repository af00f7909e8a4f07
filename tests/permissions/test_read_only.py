"""Read-only commands run without asking; their dangerous flags, and anything the check cannot
read, still go to a person; a deny rule still beats them; the config turns them off or adds more."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.rules import RuleError
from monkey.permissions.read_only import ReadOnly
from monkey.config import load_config
from tests.support.cli import invoke, write_script


def decide(command: str, **kw: object):  # type: ignore[no-untyped-def]
    return ApprovalPolicy.from_strings(**kw).check("shell_execute", {"command": command})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la src",
        "pwd",
        "cat README.md",
        "head -n 20 a.py",
        "tail -f log",
        "wc -l *.py",
        "echo hi",
        "grep -rn TODO src",
        "rg -n 'def main' monkey",
        "rg --files",
        "find . -name '*.py' -type f",
        "find src -maxdepth 2 -newer x",
        "sed -n 1,5p f",
        "sed -n '10,20p' f",
        "sed -n '/start/,/end/p' f",
        "sed 's/a/b/g' f",
        "sed -e 's/a/b/' -e '2d' f",
        "sed -E 's#x(y)#\\1#' f",
        "sed -n '$p' f",
        "sed '1~2d' f",
        "sed 's/w/e/g' f",  # w and e as text, not as commands
        "git status",
        "git status --short",
        "git diff HEAD~1 -- a.py",
        "git log --oneline -n 5",
        "git log -p",
        "git show HEAD:README.md",
        "git branch",
        "git branch -a -v",
        "git branch --show-current",
        "git branch --list 'feat*'",
        "git tag",
        "git tag -l 'v1*'",
        "git rev-parse --abbrev-ref HEAD",
        "git blame -L 1,5 a.py",
        "git ls-files",
        "git -C sub status",
        "git --no-pager log",
        "git remote -v",
        "git config --get user.name",
        "git config --list",
        "git stash list",
        "git worktree list",
        "git reflog",
        "git diff --no-ext-diff --no-textconv",
        "git grep -n foo",
        "git --version",
        "git diff --text",
        "stat a",
        "file a.bin",
        "which python3",
        "du -sh .",
        "df -h",
        "tree -L 2",
        "sort -u names",
        "uniq -c names",
        "cut -d, -f1 a.csv",
        "diff a b",
        "cmp a b",
        "base64 -d blob",
        "jq '.name' package.json",
        "xxd -l 64 a.bin",
        "date +%Y",
        "date -d yesterday +%F",
        "env",
        "printenv HOME",
        "command -v rg",
        "cd src",
        "true",
        "/usr/bin/cat a",
        "/bin/ls",
        "timeout 5 cat a",
        "nice -n 5 ls",
        "LANG=C ls",
        "env LC_ALL=C sort a",
        "sh -c 'ls | wc -l'",
        "bash -lc 'git status && git diff'",
        "xargs cat < list",
        "find . -name x | xargs wc -l",
        "ls 2>/dev/null",
        "git log 2>&1 | head",
        "cat <<EOF\nhi\nEOF",
        "ls && pwd; echo done",
    ],
)
def test_read_only_commands_run_without_asking(command: str) -> None:
    decision = decide(command)
    assert decision is not None and decision.approved and decision.reason == "read-only command", command
    assert decision.exact_line


@pytest.mark.parametrize(
    "command",
    [
        # find: run, delete, write
        "find . -exec rm {} +",
        "find . -execdir sh -c x {} ;",
        "find . -ok rm {} ;",
        "find . -okdir rm {} ;",
        "find . -delete",
        "find . -fprint out",
        "find . -fprint0 out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find *",
        "find . -name $X",
        # sed: in place, script files, commands that run or write
        "sed -i s/a/b/ f",
        "sed -i.bak s/a/b/ f",
        "sed -ni p f",
        "sed --in-place s/a/b/ f",
        "sed --in s/a/b/ f",
        "sed -f script.sed f",
        "sed 1e f",
        "sed 's/a/b/e' f",
        "sed 's/a/b/w out' f",
        "sed 's/a/b/gw out' f",
        "sed -n '1w out' f",
        "sed 'r /etc/passwd' f",
        "sed '1R x' f",
        "sed '$W out' f",
        "sed -e 's/x/y/' -e 'w o' f",
        "sed '/x/e date' f",
        "sed '1{e id\n}' f",
        "sed '1i text' f",
        "sed",
        "sed -n",
        # git: config overrides, output files, pagers, external programs, writing subcommands
        "git -c core.pager=sh log",
        "git -ccore.pager=x status",
        "git --config-env=core.pager=X log",
        "git --exec-path=. status",
        "git --git-dir=evil.git log",
        "git --work-tree=. status",
        "git -p log",
        "git --paginate status",
        "git log --output=x",
        "git log --out=x",
        "git diff --output x",
        "git show --output=x",
        "git diff --ext-diff",
        "git diff --textconv",
        "git cat-file --filters HEAD:a",
        "git grep -O less foo",
        "git grep --open-files-in-pager=x foo",
        "git branch new",
        "git branch -d old",
        "git branch -D old",
        "git branch -m a b",
        "git branch --set-upstream-to=x",
        "git tag v1",
        "git tag -d v1",
        "git config a.b c",
        "git config --unset a.b",
        "git config --edit",
        "git stash",
        "git stash pop",
        "git reflog expire --all",
        "git remote add o url",
        "git commit -m x",
        "git push",
        "git checkout x",
        "git reset --hard",
        "git fetch",
        "git",
        "git symbolic-ref HEAD refs/heads/x",
        # rg: pre-processors and decompressors
        "rg --pre ./x foo",
        "rg --pre=./x foo",
        "rg --pre-glob '*' --pre x foo",
        "rg -z foo",
        "rg -nz foo",
        "rg --search-zip foo",
        "rg --hostname-bin=./x foo",
        # other writers
        "sort -o out in",
        "sort -uo out in",
        "sort --output=out in",
        "sort --out=out in",
        "sort --compress-program=sh in",
        "uniq in out",
        "xxd in out",
        "tree -o out",
        "tree -R -H .",
        "base64 -o out in",
        "base64 --output=out in",
        "file -C -m magic",
        "date -s 2020-01-01",
        "date 0101",
        "env X=1",
        # not in the table, or not the table's program
        "rm x",
        "touch x",
        "python3 x.py",
        "awk '{print}' f",
        "tee out",
        "less f",
        "./cat x",
        "tmp/ls",
        "/tmp/cat x",
        "/usr/bin/../../tmp/cat x",
        "xargs uniq",
        "xargs sort",
        "cat x | xargs find",
        "sudo cat /etc/shadow",
        "command rm x",
        # shell syntax that makes a line unsafe
        "cat $(ls)",
        "ls > out",
        "cat <(ls)",
        "ls; rm x",
        "GIT_DIR=evil.git git log",
        "PAGER=x git log",
        "LD_PRELOAD=./x.so cat a",
        "env GIT_EXTERNAL_DIFF=./x git diff",
        "c{a,}t x",
        "/usr/bin/ca? x",
    ],
)
def test_dangerous_flags_and_everything_else_still_ask(command: str) -> None:
    decision = decide(command)
    assert decision is None or not decision.approved, command


def test_a_deny_rule_beats_a_read_only_command() -> None:
    for command in ("cat .env", "ls && cat .env", "sh -c 'cat .env'"):
        decision = decide(command, deny=["shell_execute(cat)"])
        assert decision is not None and not decision.approved and decision.by == "rule", command


def test_read_only_mixes_with_allow_rules_in_one_line() -> None:
    decision = decide("git status && make test", allow=["shell_execute(make test)"])
    assert decision is not None and decision.approved
    assert decision.reason == "read-only command; allowed by rule shell_execute(make test)"
    assert decide("git status && make test") is None


def test_turned_off_and_extra_commands() -> None:
    assert decide("ls", read_only=False) is None
    assert decide("make -n all", read_only_extra=["make -n"]).approved  # type: ignore[union-attr]
    assert decide("make all", read_only_extra=["make -n"]) is None
    assert decide("ls", read_only=False, read_only_extra=["ls"]).approved  # type: ignore[union-attr]
    assert decide("./tools/check.sh --fast", read_only_extra=["./tools/check.sh"]).approved  # type: ignore[union-attr]
    assert decide("./check.sh", read_only_extra=["check.sh"]) is None  # a bare name never covers a path
    with pytest.raises(RuleError, match="bad read_only_extra entry ''"):
        ApprovalPolicy.from_strings(read_only_extra=[""])
    with pytest.raises(RuleError, match="bad read_only_extra entry"):
        ApprovalPolicy.from_strings(read_only_extra=["make 'unterminated"])


def test_covers_line_for_a_whole_line() -> None:
    table = ReadOnly()
    assert table.covers_line("git status && git diff | head")
    assert not table.covers_line("git status && touch x")
    assert not table.covers_line("cat $(ls)")
    assert not table.covers_line("")
    from monkey.permissions.rules import Rule

    assert not table.covers_line("ls && cat .env", read_denied=[Rule.parse("file_read(.env)")])
    assert table.covers_line("ls && cat README.md", read_denied=[Rule.parse("file_read(.env)")])


def test_config_reads_read_only_settings(workspace: Path, monkey_home: Path) -> None:
    assert load_config(workspace).approvals.read_only is True
    (monkey_home / "config.toml").write_text('[approvals]\nread_only = false\nread_only_extra = ["make -n"]\n')
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey/config.toml").write_text('[approvals]\nread_only_extra = ["tokei"]\n')
    trusted = load_config(workspace, trusted=True).approvals
    assert trusted.read_only is False and trusted.read_only_extra == ["make -n", "tokei"]
    untrusted = load_config(workspace, trusted=False)
    assert untrusted.approvals.read_only_extra == ["make -n"]  # an untrusted folder adds none
    assert "approvals.read_only_extra" in untrusted.untrusted


def test_headless_run_reads_without_asking_and_refuses_the_rest(scripted, workspace: Path) -> None:
    (workspace / "old.txt").write_text("keep me\n")
    run = scripted(
        [
            {
                "tool_calls": [
                    {"name": "shell_execute", "arguments": {"command": "git status --short && cat README.md"}}
                ]
            },
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "find . -name old.txt -delete"}}]},
            {"text": "done"},
        ]
    )
    results = run.of_type("tool_result")
    assert results[0]["ok"] and "# proj" in results[0]["output"], run.stderr
    resolved = run.of_type("approval_resolved")
    assert resolved[0]["decision"] == "approved" and resolved[0]["by"] == "rule"
    assert not results[1]["ok"] and "no terminal" in results[1]["output"]
    assert (workspace / "old.txt").exists()


def test_a_bad_extra_entry_is_one_clear_line(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "config.toml").write_text('[approvals]\nread_only_extra = ["make \'oops"]\n')
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    run = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "x"],
        home=monkey_home,
    )
    assert run.returncode == 2
    assert "bad read_only_extra entry" in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert run.stdout == ""


def test_a_file_read_deny_rule_also_guards_read_only_commands(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".env").write_text("TOKEN=s3cret\n")
    (tmp_path / "link").symlink_to(tmp_path / ".env")
    policy = ApprovalPolicy.from_strings(deny=["file_read(.env)", "file_read(**/*.pem)"])

    def check(command: str):  # type: ignore[no-untyped-def]
        return policy.check("shell_execute", {"command": command}, tmp_path)

    for command in (
        "cat .env",
        "head -n 3 sub/../.env",
        "cat link",
        f"cat {tmp_path}/.env",
        "git show HEAD:.env",
        "sed -n 1p --expression=p .env",
        "cat keys/id.pem",
        "grep -r TOKEN .",
        "grep -d recurse TOKEN .",
        "diff -r . /tmp",
        "rg TOKEN",
        "git grep TOKEN",
        "cat $F",
        "xargs cat < files",
        "sh -c 'cat .env'",
        "ls && cat .env",
    ):
        assert check(command) is None, command  # a person decides
    for command in ("cat README.md", "grep TOKEN README.md", "ls -la", "git status"):
        decision = check(command)
        assert decision is not None and decision.approved, command
    no_reads = ApprovalPolicy.from_strings(deny=["file_read"])
    assert no_reads.check("shell_execute", {"command": "ls"}, tmp_path) is None


def test_headless_cat_of_a_denied_file_is_refused(scripted, workspace: Path, monkey_home: Path) -> None:
    (workspace / ".env").write_text("TOKEN=s3cret\n")
    (monkey_home / "config.toml").write_text('[approvals]\ndeny = ["file_read(.env)"]\n')
    run = scripted(
        [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "cat README.md && cat .env"}}]},
            {"text": "done"},
        ]
    )
    result = run.of_type("tool_result")[0]
    assert not result["ok"] and "no terminal" in result["output"]
    assert "s3cret" not in run.stdout


def test_a_file_read_deny_rule_makes_a_shell_read_ask_in_every_mode(tmp_path: Path) -> None:
    """Auto mode, an allow rule, a session grant and a hook's allow all ask for a line that may read a
    denied file; the person's own line and lines that read nothing denied still run."""
    from monkey.permissions.decide import Call, decide

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "secret").write_text("TOKEN=s3cret\n")
    (tmp_path / "link-to-denied").symlink_to(tmp_path / "sub" / "secret")
    reading = (
        "cat link-to-denied",
        "grep -r TOKEN .",
        "cat $(echo sub/secret)",
        "cat < sub/secret",
        "cd sub && cat secret",
        "tac sub/secret | head",
        "python3 -c 'print(1)' sub/secret",
        "cat sub/*",
    )
    harmless = ("cat README.md", "ls -la", "grep TOKEN README.md", "echo hi | wc -c")

    @dataclass
    class Allow:
        decision: str = "allow"
        reason: str = "hook"

    for mode in ("auto", "default", "accept-edits"):
        policy = ApprovalPolicy.from_strings(
            allow=["shell_execute(cat)", "shell_execute(grep)"], deny=["file_read(sub/secret)"], mode=mode
        )
        policy.remember("shell_execute", {"command": "tac x"})  # a session grant for tac
        for command in reading:
            for hook in (None, Allow()):
                verdict = decide(policy, Call("c1", "shell_execute", {"command": command}, tmp_path, hook=hook))
                assert verdict.decision is None and verdict.question is not None, (mode, command, hook)
            typed = decide(policy, Call("c1", "shell_execute", {"command": command}, tmp_path, by_person=True))
            assert typed.decision is not None and typed.decision.approved
        for command in harmless:
            verdict = decide(policy, Call("c1", "shell_execute", {"command": command}, tmp_path))
            assert verdict.decision is not None and verdict.decision.approved, (mode, command)


@pytest.mark.parametrize(
    ("rules", "line", "covered"),
    [
        (["find *"], "find . -name '*.py'", True),
        (["find *"], "find . -exec rm {} +", False),  # rm needs a rule of its own
        (["find *", "wc"], "find . -exec wc -l {} +", True),  # and wc has one
        (["find"], "find . -delete", False),
        (["find"], "find . -fprintf out %p", False),
        (["find . -delete"], "find . -delete", True),
        (["sed"], "sed -n 1p f", True),
        (["sed"], "sed -i s/a/b/ f", False),
        (["sed"], "sed '1e touch x' f", False),
        (["sed -n"], "sed -n 'w out' f", False),
        (["sed -i"], "sed -i s/a/b/ f", True),
        (["sort"], "sort -u f", True),
        (["sort"], "sort -o out f", False),
        (["sort"], "sort --out=out f", False),
        (["sort -o"], "sort -o out f", True),
        (["git:*"], "git log -p", True),
        (["git:*"], "git -c core.pager=sh log", False),
        (["git:*"], "git --exec-path=/tmp status", False),
        (["git:*"], "git push", False),
        (["git"], "git diff --ext-diff", False),
        (["git diff"], "git diff --textconv", False),
        (["rg --pre"], "rg --pre ./helper TODO", True),
        (["git"], "xargs git log", False),  # xargs may add --output=FILE
        (["git", "find"], "find . -name '*.py' -exec git log -- {} +", True),
        (["rg"], "rg TODO src", True),
        (["rg"], "rg --pre ./helper TODO", False),
        (["rg:*"], "rg -z TODO", False),
        (["sort"], "ls | xargs sort", False),  # xargs may add -o
    ],
)
def test_a_rule_for_a_program_with_a_table_covers_only_its_read_only_forms(
    rules: list[str], line: str, covered: bool
) -> None:
    for read_only in (True, False):
        for mode in ("default", "accept-edits"):
            policy = ApprovalPolicy.from_strings(
                allow=[f"shell_execute({r})" for r in rules], read_only=read_only, mode=mode
            )
            decision = policy.check("shell_execute", {"command": line})
            assert (decision is not None and decision.approved) is covered, (rules, line, read_only, mode)


def test_a_session_grant_for_a_program_with_a_table_covers_only_its_read_only_forms() -> None:
    policy = ApprovalPolicy.from_strings(read_only=False)
    policy.remember("shell_execute", {"command": "find . -name x"})  # grants `find .`
    assert policy.check("shell_execute", {"command": "find . -type f"}) is not None
    assert policy.check("shell_execute", {"command": "find . -delete"}) is None


def test_a_grant_or_kept_rule_for_an_unsafe_form_names_that_form() -> None:
    """Approving ``sed -i ...`` for the session grants ``sed -i`` (a grant of ``sed`` would no longer
    cover it), and "always allow" saves that rule."""
    from monkey.permissions.rules import rules_for

    policy = ApprovalPolicy.from_strings(read_only=False)
    policy.remember("shell_execute", {"command": "sed -i s/a/b/ f.txt"})
    policy.remember("shell_execute", {"command": "find . -delete"})
    for line in ("sed -i s/c/d/ g.txt", "find . -delete"):
        decision = policy.check("shell_execute", {"command": line})
        assert decision is not None and decision.approved, line
    assert policy.check("shell_execute", {"command": "find src -delete"}) is None
    assert rules_for("shell_execute", {"command": "sort -o out names"}) == ["shell_execute(sort -o)"]
    assert rules_for("shell_execute", {"command": "git status"}) == ["shell_execute(git status)"]
