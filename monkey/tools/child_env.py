"""What a command the agent runs finds in its environment besides the scrubbed one.

No program may wait for a person who is not there, and a repository may not run its own
code through git's configuration when the agent runs an allowed ``git status``:

- editors and pagers are non-interactive (``GIT_EDITOR=true``: ``git commit`` without ``-m``
  ends at once with "empty commit message" instead of opening an editor until the timeout);
- git asks for no credentials on the terminal (``GIT_TERMINAL_PROMPT=0``);
- git commands ignore the repository's ``core.fsmonitor`` (a program git would run on every
  status), its pager and its ssh command, through ``GIT_CONFIG_COUNT``, which overrides the
  repository's config (git 2.31 and later); entries already in the environment are kept.
  (A repository's ``diff.external`` cannot be switched off this way: an empty value makes
  git fail; that needs the sandbox of the permission engine.)
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NON_INTERACTIVE", "GIT_OVERRIDES", "for_child"]

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


def for_child(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` (already scrubbed) with the non-interactive settings and git overrides added."""
    out = {**env, **NON_INTERACTIVE}
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
