"""``monkey undo``, ``monkey restore`` and ``monkey checkpoints [show|gc]``.

The parsers are defined here (no heavy imports at module level, so ``monkey --help``
stays fast); the work is done by :class:`monkey.checkpoints.api.Checkpoints`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monkey.safe_text import for_stream

__all__ = ["add_parsers", "run_checkpoint_command", "COMMANDS"]

COMMANDS = ("undo", "restore", "checkpoints")


def add_parsers(sub: Any, positive_int: Callable[[str], int]) -> None:
    """Add the undo, restore and checkpoints subcommands to the CLI's subparsers."""
    undo = sub.add_parser(
        "undo",
        help="undo the latest change monkey made in this workspace",
        description="Undo changes monkey made: the latest one, the last N, a session's, or all since a checkpoint. "
        "Only what monkey changed is touched; a file changed by someone else since is refused "
        "(with a diff) unless --force.",
    )
    undo.add_argument("--steps", type=positive_int, help="undo the last N changes (default 1)")
    undo.add_argument("--session", help="undo every change of this session (with --steps: its last N)")
    undo.add_argument("--to", metavar="CHECKPOINT", help="undo every change from this checkpoint on")
    undo.add_argument("--force", action="store_true", help="overwrite files changed by someone else since")
    undo.add_argument("--json", action="store_true", help="print the undo_applied event as JSON")
    undo.add_argument("--cwd", help="workspace directory (default: the current directory)")

    restore = sub.add_parser(
        "restore",
        help="put every file monkey changed since a checkpoint back as it was then",
        description="Put every file monkey changed at or after CHECKPOINT back as it was when the checkpoint "
        "was taken. Files monkey never touched stay as they are.",
    )
    restore.add_argument("checkpoint", help="a checkpoint id (or a unique start of one)")
    restore.add_argument("--force", action="store_true", help="overwrite files changed by someone else since")
    restore.add_argument("--json", action="store_true", help="print the undo_applied event as JSON")
    restore.add_argument("--cwd", help="workspace directory (default: the current directory)")

    cps = sub.add_parser(
        "checkpoints",
        help="list checkpoints (show ID: the diff; gc: prune old ones)",
        description="List the checkpoints of this workspace with their tool, paths, time and diff stats.",
    )
    cps.add_argument("--session", help="only this session's checkpoints")
    cps.add_argument("--json", action="store_true", help="print JSON")
    cps.add_argument("--cwd", help="workspace directory (default: the current directory)")
    cps_sub = cps.add_subparsers(dest="checkpoints_command", metavar="{show,gc}")
    show = cps_sub.add_parser("show", help="print the diff of one checkpoint's change")
    show.add_argument("checkpoint", help="a checkpoint id (or a unique start of one)")
    show.add_argument("--cwd", default=argparse.SUPPRESS, help="workspace directory")
    gc = cps_sub.add_parser("gc", help="prune old checkpoints and shrink the shadow repository")
    gc.add_argument("--keep-days", type=float, help="drop checkpoints older than this many days (default 30)")
    gc.add_argument("--max-size", help="then drop the oldest until the repository is under SIZE (e.g. 500M)")
    gc.add_argument("--cwd", default=argparse.SUPPRESS, help="workspace directory")


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    return code


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def run_checkpoint_command(args: argparse.Namespace) -> int:
    """Run one of :data:`COMMANDS`; returns the exit status."""
    from monkey.checkpoints.api import Checkpoints, UndoError, parse_size
    from monkey.checkpoints.gitrun import GitError
    from monkey.checkpoints.undo import UndoConflict
    from monkey.config import ConfigError, load_config, monkey_home
    import sqlite3

    from monkey.db import DatabaseError, db_path, empty_notice, explain, os_error_text

    workspace = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    if not workspace.is_dir():
        return _fail(f"workspace {workspace} is not a directory", 2)
    for notice in empty_notice(db_path(monkey_home())):
        sys.stderr.write(f"monkey: {notice}\n")
    try:
        config = load_config(workspace.resolve())
        cps = Checkpoints(workspace, home=monkey_home(), max_file_size=config.checkpoints.max_file_size)
        if args.command == "checkpoints":  # undo and restore repair first themselves (see Checkpoints.undo)
            for note in cps.guard.repair():
                sys.stderr.write(f"monkey: {for_stream(note, sys.stderr)}\n")
            if args.checkpoints_command == "show":
                sys.stdout.write(for_stream(cps.show(args.checkpoint), sys.stdout))
                return 0
            if args.checkpoints_command == "gc":
                try:
                    max_size = parse_size(args.max_size) if args.max_size is not None else None
                except ValueError as exc:
                    return _fail(str(exc), 2)
                keep = args.keep_days if args.keep_days is not None else (None if max_size is not None else 30.0)
                res = cps.gc(keep_days=keep, max_size=max_size)
                from monkey.checkpoints.guard import human_size

                print(
                    f"removed {len(res.removed)} checkpoint(s); shadow repository "
                    f"{human_size(res.size_before)} -> {human_size(res.size_after)}"
                )
                return 0
            return _list(cps, args)
        restore = args.command == "restore"
        try:
            outcome = (
                cps.restore(args.checkpoint, force=args.force)
                if restore
                else cps.undo(steps=args.steps, session_id=args.session, to=args.to, force=args.force)
            )
        finally:
            for note in cps.notes:
                sys.stderr.write(f"monkey: {for_stream(note, sys.stderr)}\n")
    except UndoConflict as exc:
        for conflict in exc.conflicts:
            sys.stderr.write(f"monkey: {for_stream(conflict.reason, sys.stderr)}\n")
            if conflict.diff:
                diff = for_stream(conflict.diff, sys.stderr)
                sys.stderr.write(diff if diff.endswith("\n") else diff + "\n")
        return _fail(
            f"nothing was undone: {len(exc.conflicts)} file(s) changed since monkey's change "
            "(run again with --force to overwrite them)",
            1,
        )
    except UndoError as exc:
        return _fail(for_stream(str(exc), sys.stderr), 1)
    except (ConfigError, DatabaseError, GitError) as exc:
        return _fail(str(exc), 1)
    except sqlite3.Error as exc:  # a failure the journal did not name itself
        return _fail(explain(exc, db_path(monkey_home())), 1)
    except BrokenPipeError:
        raise  # stdout's reader went away: the command line ends quietly
    except OSError as exc:
        return _fail(os_error_text(exc, workspace), 1)
    from monkey.checkpoints.api import undo_event

    if args.json:
        from monkey.events import encode

        sys.stdout.write(encode(undo_event(outcome)).decode() + "\n")
        return 0
    if outcome.completed_interrupted:
        print(
            f"completed the interrupted undo {outcome.undo_id} of {len(outcome.checkpoint_ids)} change(s) "
            f"({', '.join(outcome.checkpoint_ids)}); nothing more was undone (run monkey undo again for more)"
        )
    else:
        print(
            f"undid {len(outcome.checkpoint_ids)} change(s) ({', '.join(outcome.checkpoint_ids)}); "
            f"undo id {outcome.undo_id}"
        )
    for path in outcome.paths:
        how = (
            "removed (monkey had created it)"
            if path in outcome.removed
            else "brought back (monkey had deleted it)"
            if path in outcome.restored
            else "restored"
        )
        print(f"  {for_stream(path, sys.stdout)}: {how}")
    for line in outcome.left_alone:
        print(f"  {for_stream(line.replace(': ', ': left as it is, not attributable to monkey: ', 1), sys.stdout)}")
    if outcome.overwritten:
        print(f"  overwritten with --force: {for_stream(', '.join(outcome.overwritten), sys.stdout)}")
    return 0


def _list(cps: Any, args: argparse.Namespace) -> int:
    infos = cps.list(session_id=args.session)
    if args.json:
        data = {
            "workspace": str(cps.guard.workspace),
            "shadow_repository": str(cps.shadow_path),
            "size_bytes": cps.size(),
            "checkpoints": [i.as_dict() for i in infos],
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    print(cps.status())
    if not infos:
        print("no checkpoints yet: monkey takes one before every change it makes")
        return 0
    for info in infos:
        stats = f"+{info.added} -{info.removed}" + (f" {info.binary} binary" if info.binary else "")
        paths = for_stream(", ".join(info.paths), sys.stdout) if info.paths else "(no file changed)"
        marks = ""
        if info.not_attributable:
            marks += f"  [not attributable: {for_stream(', '.join(info.not_attributable), sys.stdout)}]"
        if info.not_undoable:
            marks += f"  [cannot be undone: {for_stream('; '.join(info.not_undoable), sys.stdout)}]"
        print(f"{info.id}  {_when(info.created_at)}  {info.tool:<13} {info.state:<9} {stats:<10} {paths}{marks}")
    return 0
