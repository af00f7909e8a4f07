"""What a command the agent runs finds in its environment besides the scrubbed one.

No program may wait for a person who is not there, and a repository may not run its own
code through git's configuration when the agent runs an allowed ``git status``:

- editors and pagers are non-interactive (``GIT_EDITOR=true``: ``git commit`` without ``-m``
  ends at once with "empty commit message" instead of opening an editor until the timeout);
- git asks for no credentials on the terminal (``GIT_TERMINAL_PROMPT=0``);
- git commands ignore the repository's ``core.fsmonitor`` (a program git would run on every
  status), its pager and its ssh command, through ``GIT_CONFIG_COUNT``, which overrides the
  repository's config (git 2.31 and later); entries already in the environment are kept;
- a repository whose config may set ``diff.external`` (it names it, or includes another
  file) gets ``GIT_EXTERNAL_DIFF``, which git obeys before any config, set to a plain
  ``diff -u`` (an empty value would make git fail, so it cannot just be switched off).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["NON_INTERACTIVE", "GIT_OVERRIDES", "PLAIN_EXTERNAL_DIFF", "for_child"]

NON_INTERACTIVE = {
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
}
"""Variables that keep programs from waiting for a person."""

GIT_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.sshCommand", "ssh -o BatchMode=yes"),
)
"""Repository settings that would run a program of the repository's choosing."""


PLAIN_EXTERNAL_DIFF = 'monkey_diff() { diff -u --label "a/$1" --label "b/$1" "$2" "$5"; [ $? -le 1 ]; }; monkey_diff'
"""What git runs instead of a repository's ``diff.external``: the unified diff of the two
versions (git runs it through ``sh`` with path, old file, old hex, old mode, new file...)."""

_MAY_SET_EXTERNAL = re.compile(r"external|include", re.IGNORECASE)


def _repository_config(workspace: Path) -> str:
    """The text of the workspace repository's own config ("" when there is none to read)."""
    git = workspace / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: PATH"
            target = git.read_text(encoding="utf-8", errors="replace").partition("gitdir:")[2].strip()
            git = (workspace / target).resolve()
            common = git / "commondir"
            if common.is_file():
                git = (git / common.read_text(encoding="utf-8").strip()).resolve()
        return (git / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def for_child(env: Mapping[str, str], workspace: Path | None = None) -> dict[str, str]:
    """``env`` (already scrubbed) with the non-interactive settings and git overrides added.

    ``workspace``: the folder commands run in; when its repository's config may choose an
    external diff program, git is told to use a plain ``diff -u`` instead.
    """
    out = {**env, **NON_INTERACTIVE}
    if workspace is not None and _MAY_SET_EXTERNAL.search(_repository_config(workspace)):
        out["GIT_EXTERNAL_DIFF"] = PLAIN_EXTERNAL_DIFF
    try:
        count = max(0, int(out.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        count = 0
    for key, value in GIT_OVERRIDES:
        out[f"GIT_CONFIG_KEY_{count}"] = key
        out[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    out["GIT_CONFIG_COUNT"] = str(count)
    return out
