"""Running git for the shadow repository, hardened.

Every git process monkey starts gets a fresh environment: no inherited ``GIT_*`` variable,
no system, global or user config, no hooks, no fsmonitor, no pager, no editor, no
signing, no credential prompts. The repository and work tree are always named explicitly,
so git never discovers (or reads the config of) the user's own repository.

GitPython's ``Git.execute`` starts from ``os.environ`` and can only add variables, never
remove inherited ones (``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_CONFIG_PARAMETERS``...), so
commands run through :func:`run_git` with an environment built from nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["GitError", "HARDENING", "git_env", "run_git", "git_executable"]

HARDENING: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.quotePath", "false"),
    ("core.logAllRefUpdates", "false"),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
)
"""Settings given on every command line (``-c``) and written into the shadow config."""

_KEEP = ("PATH", "TMPDIR", "SYSTEMROOT")


class GitError(Exception):
    """A git command failed; the message says which and why."""


def git_executable() -> str:
    """The git program, or a :class:`GitError` when there is none."""
    found = shutil.which("git")
    if found is None:
        raise GitError("git is not installed (checkpoints need the git program on PATH)")
    return found


def git_env(git_dir: Path, work_tree: Path | None, index: Path | None = None) -> dict[str, str]:
    """The whole environment of a shadow git command (nothing inherited but PATH/TMPDIR);
    ``index``: another index file than the shadow's own."""
    env = {k: os.environ[k] for k in _KEEP if k in os.environ}
    home = git_dir.parent
    env.update(
        LC_ALL="C",
        LANGUAGE="C",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "xdg"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_DIR=str(git_dir),
        GIT_INDEX_FILE=str(index or git_dir / "index"),
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        GIT_EDITOR="true",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_ASKPASS="true",
        GIT_SSH_COMMAND="false",
    )
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    return env


def run_git(
    git_dir: Path,
    work_tree: Path | None,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    check: bool = True,
    timeout: float = 600,
    literal: bool = True,
    index: Path | None = None,
) -> bytes:
    """Run one git command on the shadow repository and return its stdout.

    Paths are literal pathspecs unless ``literal`` is false (``check-ignore`` refuses the option).
    """
    argv = [git_executable(), "--no-pager"] + (["--literal-pathspecs"] if literal else [])
    for key, value in HARDENING:
        argv += ["-c", f"{key}={value}"]
    argv += list(args)
    cwd = work_tree if work_tree is not None else git_dir.parent
    try:
        proc = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=git_env(git_dir, work_tree, index),
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0] if args else ''} could not run: {exc}") from None
    if check and proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0] if args else ''} failed ({proc.returncode}): {err}")
    return proc.stdout
