"""What a change's file records get once its after-tree is known: the sandbox's placeholders left
out, the folders a shell command created, and the lines it added and removed (for the metrics)."""

from __future__ import annotations

import os
from pathlib import Path

from monkey import children
from monkey.checkpoints.gitrun import GitError
from monkey.checkpoints.journal import Entry, FileRecord
from monkey.checkpoints.shadow import ShadowRepo
from monkey.checkpoints.trees import Trees

__all__ = ["line_counts", "note_created_dirs", "without_placeholders"]


def without_placeholders(
    home: Path, workspace: Path, shadow: ShadowRepo, records: list[FileRecord]
) -> list[FileRecord]:
    """``records`` but the sandbox's placeholders (empty mount points for protected config not
    there yet, :func:`monkey.children.hold_placeholder`) that a snapshot taken while another
    command ran caught: monkey's own, which an undo or redo must never touch."""
    held = children.placeholders(home / "children") if records else set()
    if not held:
        return records
    empty = shadow.store_blob(b"")
    return [
        r
        for r in records
        if not (
            str(workspace / r.path.rstrip("/")) in held
            and r.before_sha in (None, empty)
            and r.after_sha in (None, empty)
        )
    ]


def note_created_dirs(trees: Trees, entry: Entry, old_empty: set[str]) -> None:
    """For files a shell command created: the folders above them the before-tree lacked
    (an empty folder that was there before does not count)."""
    created = [r for r in entry.files if r.created and "/" in r.path]
    wanted = {"/".join(r.path.split("/")[:i]) for r in created for i in range(1, r.path.count("/") + 1)}
    if not wanted:
        return
    existing = {d for d in wanted if trees.is_dir(entry.before_tree, d)}
    for rec in created:
        parts = rec.path.split("/")[:-1]
        dirs = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        rec.created_dirs = [d for d in dirs if d not in existing and d not in old_empty]


def line_counts(shadow: ShadowRepo, entry: Entry) -> tuple[int, int, int]:
    """``(lines added, lines removed, files changed)`` by a finished change, from its journal entry's
    trees (binary files count as changed, with no lines); zeros for a change that changed nothing."""
    if entry.state != "applied" or not entry.before_tree or not entry.after_tree:
        return 0, 0, 0
    paths = {r.path for r in entry.files if not r.path.endswith("/")}
    try:
        out = shadow.git(
            "diff-tree",
            "-r",
            "-z",
            "--numstat",
            "--no-renames",
            "--no-ext-diff",
            entry.before_tree,
            entry.after_tree,
            work_tree=False,
        )
    except (GitError, OSError):
        return 0, 0, len(paths)
    added = removed = 0
    for item in out.split(b"\x00"):
        fields = item.split(b"\t", 2)
        if len(fields) != 3 or os.fsdecode(fields[2]) not in paths:
            continue
        added += int(fields[0]) if fields[0].isdigit() else 0
        removed += int(fields[1]) if fields[1].isdigit() else 0
    return added, removed, len(paths)
