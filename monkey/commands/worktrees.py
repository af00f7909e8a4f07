"""``monkey worktrees list|rm`` and ``monkey agent --worktree [NAME]`` (see :mod:`monkey.worktrees`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from monkey.safe_text import escape_controls

__all__ = ["add_parser", "run_worktrees_command", "make_worktree", "take_back"]


def add_parser(sub) -> None:
    worktrees = sub.add_parser(
        "worktrees",
        help="list or remove the git worktrees sessions ran in (monkey agent --worktree NAME)",
        description="Worktrees monkey made (in .monkey/worktrees/ of the repository, each on a branch "
        "monkey/NAME). Removing one keeps its branch for you to merge.",
    )
    wsub = worktrees.add_subparsers(dest="worktrees_command", metavar="ACTION")
    worktrees.set_defaults(_commands=wsub.choices)
    ls = wsub.add_parser("list", help="this repository's worktrees: name, branch, changes, in use")
    ls.add_argument("--json", action="store_true", help="one JSON array")
    rm = wsub.add_parser("rm", help="remove a worktree (its branch stays)")
    rm.add_argument("name", help="the worktree's name")
    rm.add_argument(
        "--force",
        action="store_true",
        help="remove it even with uncommitted or untracked files "
        "(they are lost; a running session's worktree is never removed)",
    )


def _say(text: str) -> None:
    sys.stdout.write(escape_controls(text, keep_newlines=True) + "\n")


def _fail(text: str, code: int = 1) -> int:
    sys.stderr.write(f"monkey: {escape_controls(text, keep_newlines=False)}\n")
    return code


def run_worktrees_command(args: argparse.Namespace) -> int:
    from monkey.config import monkey_home
    from monkey.worktrees import WorktreeError, changes, in_use, list_worktrees, remove

    here = Path.cwd()
    home = monkey_home()
    try:
        if args.worktrees_command == "list":
            found = list_worktrees(here)
            rows: list[dict[str, Any]] = []
            for w in found:
                dirty = len(changes(w.path)) if w.path.is_dir() else -1
                rows.append({**w.to_dict(), "changed_files": dirty, "in_use": in_use(w.path, home)})
            if args.json:
                _say(json.dumps(rows, ensure_ascii=False))
                return 0
            if not rows:
                _say("no worktrees (monkey agent --worktree NAME makes one)")
            for row in rows:
                state = (
                    "missing"
                    if row["changed_files"] < 0
                    else "locked"
                    if row["locked"] is not None
                    else f"{row['changed_files']} changed"
                    if row["changed_files"]
                    else "clean"
                )
                _say(
                    f"{row['name']:<20} {row['branch']:<28} {state:<11} {'in use' if row['in_use'] else '':<7} "
                    f"{row['path']}"
                )
            return 0
        if args.worktrees_command == "rm":
            gone = remove(here, args.name, home=home, force=args.force)
            _say(
                f"removed worktree {gone.name} ({gone.path}); its branch {gone.branch} stays: merge it "
                f"(git merge {gone.branch}) or delete it (git branch -D {gone.branch})"
            )
            return 0
    except WorktreeError as exc:
        return _fail(str(exc))
    sys.stderr.write("usage: monkey worktrees list|rm NAME\n")
    return 2


def make_worktree(args: argparse.Namespace):
    """``--worktree [NAME]``: the worktree made for this session and the lines to tell, or the usage error.

    Returns ``(worktree, folder, notes, error)``; ``error`` is '' when the worktree was made. The session
    works in ``folder``: the worktree's folder that the workspace is in its own checkout (its top when
    started there).
    """
    from monkey.worktrees import WorktreeError, create, same_folder

    if args.continue_ or args.resume is not None:
        return (
            None,
            None,
            [],
            (
                "--worktree makes a new worktree, where no session is stored yet; to go on with a "
                "session there, run monkey agent --continue in the worktree's folder"
            ),
        )
    start = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    try:
        worktree, notes = create(start, args.worktree or None)
    except WorktreeError as exc:
        return None, None, [], str(exc)
    folder = same_folder(worktree, start)
    said = [
        f"worktree {worktree.name}: {worktree.path} on the new branch {worktree.branch} (from "
        f"{worktree.head[:7]}); monkey worktrees rm {worktree.name} removes it, the branch stays",
        *notes,
    ]
    if folder != worktree.path:
        said.append(f"the session works in {folder}, the worktree's copy of the folder it was started in")
    return worktree, folder, said, ""


def take_back(worktree) -> None:
    """Remove a worktree made for a session that could not start (nothing was done in it), and its branch."""
    from monkey.config import monkey_home
    from monkey.worktrees import WorktreeError, delete_branch, remove

    try:
        remove(worktree.path, worktree.name, home=monkey_home(), force=True)
        delete_branch(worktree.path.parent, worktree.branch)
    except WorktreeError:
        pass
