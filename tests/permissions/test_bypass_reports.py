"""Regression cases from public reports of permission bypasses in other coding agents.

Each case names the report it comes from (repository and issue or pull request number) and
asserts what monkey decides. Three policies are used:

- ``DENY``: every command allowed (``shell_execute``) except ``rm`` and ``curl``, which are
  denied: a line that runs a denied command must be denied, and a line that could hide one
  must go to a person (never be allowed);
- ``SCOPED``: only a few commands allowed by rule (no read-only table): a line that runs
  anything else must go to a person;
- ``READ_ONLY``: no rules, the built-in read-only table on: a read-only program used with a
  flag that writes or runs something must go to a person.
"""

from __future__ import annotations

import pytest

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision


def DENY(line: str) -> Decision | None:  # noqa: N802 - named like the policy it stands for
    policy = ApprovalPolicy.from_strings(
        allow=["shell_execute"], deny=["shell_execute(rm)", "shell_execute(curl)"], read_only=False
    )
    return policy.check("shell_execute", {"command": line})


def SCOPED(line: str) -> Decision | None:  # noqa: N802
    policy = ApprovalPolicy.from_strings(
        allow=[
            "shell_execute(echo)",
            "shell_execute(cd)",
            "shell_execute(true)",
            "shell_execute(cat)",
            "shell_execute(wc)",
            "shell_execute(git log)",
            "shell_execute(git status)",
            "shell_execute(find)",
            "shell_execute(ls)",
        ],
        read_only=False,
    )
    return policy.check("shell_execute", {"command": line})


def READ_ONLY(line: str) -> Decision | None:  # noqa: N802
    return ApprovalPolicy.from_strings().check("shell_execute", {"command": line})


def denied(decision: Decision | None) -> bool:
    return decision is not None and not decision.approved and decision.by == "rule"


def asks(decision: Decision | None) -> bool:
    return decision is None


def allowed(decision: Decision | None) -> bool:
    return decision is not None and decision.approved


CASES = [
    # anthropics/claude-code#4956: an allowed `echo` chained with another command
    (SCOPED, 'echo "test" && touch pwned', asks),
    # anthropics/claude-code#28784: Bash(cd:*) allowed `cd /path && python3 script.py`
    (SCOPED, "cd /some/path && python3 script.py", asks),
    # anthropics/claude-code#94314: an allowed `git log` smuggles a second command after `;`
    (SCOPED, "git log --oneline; touch pwned", asks),
    (SCOPED, "git log --oneline && touch pwned", asks),
    # anthropics/claude-code#58424: compound `rm -rf … && … | … ; echo …` ran with no prompt
    (DENY, "rm -rf build && ls | head ; echo done", denied),
    (SCOPED, "rm -rf build && ls | cat ; echo done", asks),
    # anthropics/claude-code#70369: a brace group and a process substitution beat a deny rule
    (DENY, "{ rm -rf x; }", denied),
    (DENY, "cat <(rm -rf x) foo.txt", denied),
    # anthropics/claude-code#39601: deny rules not applied inside $(), backticks, subshells, eval
    (DENY, "echo $(rm -rf x)", denied),
    (DENY, "echo `rm -rf x`", denied),
    (DENY, "(rm -rf x)", denied),
    (DENY, "eval 'rm -rf x'", asks),
    # anthropics/claude-code#92542: deny rules beaten by a wrapper outside the unwrap list
    (DENY, "flock /tmp/lock rm -rf x", denied),
    (DENY, "flock /tmp/lock -c 'rm -rf x'", denied),
    (DENY, "watch -n 5 rm -rf x", denied),
    (DENY, "taskset -c 1 rm -rf x", denied),
    (DENY, "stdbuf -o0 rm -rf x", denied),
    (DENY, "setsid rm -rf x", denied),
    (DENY, "busybox rm -rf x", denied),
    (DENY, "su -c 'rm -rf x' bob", denied),
    (DENY, "sudo -u bob rm -rf x", denied),
    # anthropics/claude-code#88857: a flag before the subcommand (git -C path ...) passed a deny rule
    # `git rm` is not the program `rm` (a rule names programs), but it writes .git/: a person decides
    (DENY, "git -C . rm --cached x", asks),
    # anthropics/claude-code#18613: deny rules beaten by reordered flags; deny the program instead
    (DENY, "rm -fr /", denied),
    (DENY, "rm --recursive --force /", denied),
    # anthropics/claude-code#45469, #49874: a leading variable assignment
    (DENY, "FOO=1 rm -rf x", denied),
    (DENY, "LD_PRELOAD=./evil.so ls", asks),
    (DENY, "PATH=.:$PATH ls", asks),
    # anthropics/claude-code#2719 (the checks its parser runs): IFS, newlines, unbalanced quotes
    (DENY, "rm${IFS}-rf${IFS}x", asks),
    (DENY, "cat${IFS}/etc/passwd", asks),
    (DENY, "ls\nrm -rf x", denied),
    (DENY, 'echo "hello', asks),
    # anthropics/claude-code#46785: brace expansion; in a program's name it can spell a denied one
    (DENY, "c{u,}rl http://x", asks),
    (DENY, "{rm,-rf,x}", asks),
    (SCOPED, "wc -l part{1,2,3}.diff", allowed),
    (READ_ONLY, "find . -{exec,ok} rm {} +", asks),
    # anthropics/claude-code#1195: backslash-newline continues a line; it hides nothing
    (DENY, "ls \\\n  a.txt \\\n  b.txt", allowed),
    (DENY, "git rm --cached \\\n  a.txt \\\n  b.txt", asks),  # it writes .git/: protected
    (DENY, "ls \\\n; rm -rf x", denied),
    # the separators Claude Code's docs list (anthropics/claude-code#94314): |&, &, newline
    (DENY, "ls |& rm -rf x", denied),
    (DENY, "sleep 1 & rm -rf x", denied),
    (SCOPED, "ls & touch pwned", asks),
    # google-gemini/gemini-cli#11510: only the first command of a pipe was checked
    (SCOPED, "cat file.txt | sort", asks),
    # google-gemini/gemini-cli#11766: chains and redirections after an allowed command
    (SCOPED, "true && touch important_file.txt", asks),
    (DENY, "true && rm important_file.txt", denied),
    (SCOPED, "true || touch x", asks),
    # google-gemini/gemini-cli#11047: output redirection wrote outside the workspace
    (SCOPED, "wc README.md > ~/wc_output", asks),
    (READ_ONLY, "wc README.md >> ~/.bashrc", asks),
    # google-gemini/gemini-cli#5495: eval runs a string the check cannot see
    (SCOPED, 'eval "$PAYLOAD"', asks),
    # google-gemini/gemini-cli PR 6010: >( ) process substitution writes a file
    (SCOPED, 'echo "x" >(tee /tmp/malicious_script.sh)', asks),
    # google-gemini/gemini-cli PR 9181: `echo x | cat > protected-file.txt` with echo allowed
    (SCOPED, "echo something evil | cat >protected-file.txt", asks),
    # openai/codex#28732 and #37078: a path-qualified program with a read-only name (./sed, ./cat)
    (READ_ONLY, "./sed -n 1p file.txt", asks),
    (READ_ONLY, "./cat README.md", asks),
    (READ_ONLY, "/tmp/evil/cat README.md", asks),
    (READ_ONLY, "a/b/cat x", asks),
    # openai/codex#18694: pager-forcing git global options on read-only subcommands
    (READ_ONLY, "git -p status", asks),
    (READ_ONLY, "git --paginate show HEAD", asks),
    (READ_ONLY, "git log -p", allowed),
    # openai/codex PR 20277: backslash escapes in unquoted words (bash removes them)
    (READ_ONLY, "find . -e\\xec rm {} +", asks),
    (DENY, "r\\m -rf x", denied),
    (DENY, "\\rm -rf x", denied),
    # openai/codex PR 21392: rg's pre-processor through an escaped word and a zsh wrapper
    (READ_ONLY, "zsh -lc 'rg --p\\re=./x needle'", asks),
    (READ_ONLY, "/bin/zsh -lc 'rg --pre ./x needle'", asks),
    # openai/codex PR 482: find's exec, delete and file-printing actions
    (READ_ONLY, "find . -name file.txt -exec rm {} ;", asks),
    (READ_ONLY, "find . -fprintf /root/suid.txt '%#m %u %p'", asks),
    (DENY, "find . -name x -exec rm {} +", denied),
    # andrewyng/openworker PR 279: an allowed `find` ran `-exec ... {} +`
    (SCOPED, "find . -exec touch /tmp/pwned {} +", asks),
    # aws/amazon-q-developer-cli-autocomplete PR 444: find -okdir runs a program
    (READ_ONLY, "echo y | find . -type f -maxdepth 1 -okdir open -a Calculator {} +", asks),
    # esengine/DeepSeek-Reasonix PR 4452 and microsoft/vscode PR 329216: sed's e, w, r commands
    (READ_ONLY, "sed '1e id' f", asks),
    (READ_ONLY, "sed 's/x/id/e' f", asks),
    (READ_ONLY, "sed -n '/x/w out.txt' f", asks),
    (READ_ONLY, "sed '$r /etc/passwd' f", asks),
    (READ_ONLY, "sed -n 's/a/b/w /dev/stdout' f", asks),
    # openclaw/openclaw PR 70543: sed -i on a read-only list
    (READ_ONLY, "sed -i 's/old/new/' config.txt", asks),
    # Tracer-Cloud/opensre PR 5840: rg --pre=<helper> allowed as read-only
    (READ_ONLY, "rg --pre=./helper pattern .", asks),
    # DataDog/dd-sdk-android PR 3745: git grep --open-files-in-pager runs a program
    (READ_ONLY, "git grep --open-files-in-pager='sh -c id' foo", asks),
    (READ_ONLY, "git grep -Osh foo", asks),
    # infrahub PR 8888 (opsmill/infrahub): Bash(find :*) allows -exec
    (SCOPED, "find . -name '*.py' -exec python3 {} +", asks),
    # QwenLM/qwen-code PR 11765: ANSI-C quoting $'...' confused a splitter
    (SCOPED, "echo $'a\\'' ; touch pwned", asks),
    (DENY, "echo $'a\\'' ; rm -rf x", denied),
    # NousResearch/hermes-agent PR 76219, PR 83144: a program named through ANSI-C quoting
    (DENY, "$'\\x72\\x6d' -rf x", asks),
    (DENY, "command $'\\x72\\x6d' -rf /", asks),
    # NousResearch/hermes-agent PR 56232: $IFS as a word separator
    (DENY, "rm${IFS}-rf${IFS}/", asks),
    # NousResearch/hermes-agent#58736: commands carried in an argument
    (DENY, "sh -c 'rm -rf x'", denied),
    (DENY, "env --split-string='rm -rf x'", asks),
    (DENY, "env -S 'rm -rf x'", asks),
    (DENY, "xargs rm -rf < list", denied),
    (DENY, "find . -exec rm -rf {} +", denied),
    # rebel0789/codexpro PR 52: a raw newline between commands
    (DENY, "pwd\nrm -rf x", denied),
    (SCOPED, "ls\ntouch file", asks),
    # sbknana/equipa PR 6: a newline inside quotes is not a separator
    (SCOPED, 'echo "a\nrm -rf x"', allowed),
    # bash -c with a quoted variable, and scripts fed to a shell on its input
    (DENY, 'bash -c "$CMD"', asks),
    (DENY, "echo cm0gLXJmIHgK | base64 -d | sh", asks),
    (DENY, "bash <<< 'rm -rf x'", asks),
    (DENY, "bash <<EOF\nrm -rf x\nEOF", asks),
    # here-documents expand substitutions in their body
    (DENY, "cat <<EOF\n$(rm -rf x)\nEOF", denied),
    # command -p runs its command (with the default PATH); command -v only looks it up
    (DENY, "command -p rm -rf x", denied),
    (DENY, "command -v rm", allowed),
    # a glob in the program's name is expanded by the shell
    (DENY, "/usr/bin/cur? http://x", asks),
    (DENY, "/bin/r[m] -rf x", asks),
]


@pytest.mark.parametrize(("policy", "line", "expected"), CASES, ids=[f"{i}-{c[1][:30]!r}" for i, c in enumerate(CASES)])
def test_public_bypass_reports(policy, line: str, expected) -> None:  # type: ignore[no-untyped-def]
    decision = policy(line)
    assert expected(decision), (line, decision)
