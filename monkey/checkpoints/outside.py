"""What a whole-tree change did that its snapshots could not hold, so undo cannot revert.

Shell snapshots leave out files over ``[checkpoints] max_file_size`` and everything in a
nested git repository, and git trees hold no empty folders. :func:`judge` compares what the
snapshots before and after saw of these and:

- names every large file or nested repository the call created, changed or deleted
  (``entry.unrecorded``: shown at once as a ``not_undoable`` event, marked by
  ``monkey checkpoints``);
- drops a "created" record for a file that was only too large before (it existed: undo
  must not delete it);
- records the empty folders the call created (a record whose path ends with ``/``), so
  undo removes them again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from monkey.checkpoints.journal import Entry, FileRecord
from monkey.checkpoints.shadow import Outside

__all__ = ["judge", "NESTED_WALK_LIMIT"]

NESTED_WALK_LIMIT = 20_000
"""At most this many entries of a nested repository are looked at for a change."""


def judge(
    workspace: Path,
    entry: Entry,
    before: Outside | None,
    after: Outside,
    *,
    limit: str,
    tracked: Callable[[list[str]], set[str]],
    changed_inside: Callable[[str], str] | None = None,
) -> None:
    """Fill ``entry.unrecorded`` and fix its records (``before`` is None after a kill).

    ``tracked(paths)`` says which of the paths the snapshot before held; ``changed_inside(folder)``
    the first path written in a nested repository during the call, where the write watch saw
    them all (else the files' change times are looked at).
    """
    since = entry.created_at
    out: list[list[str]] = []
    over = f"over the checkpoint size limit ({limit}), so it was not recorded"
    old_big = before.big if before is not None else {}
    grown = tracked([rel for rel in after.big if rel not in old_big])
    for rel, sig in after.big.items():
        if before is None:
            if sig[2] / 1e9 >= since:
                out.append([rel, f"changed; {over}"])
        elif rel in grown:
            out.append([rel, f"changed; its new content is {over}"])
        elif rel not in old_big:
            out.append([rel, f"created; {over}"])
        elif old_big[rel] != sig:
            out.append([rel, f"changed; {over}"])
    for rel in old_big:
        if rel in after.big:
            continue
        if not os.path.lexists(workspace / rel):
            out.append([rel, f"deleted; it was {over}"])
        else:
            out.append([rel, f"changed; it was {over} before"])
            entry.files = [r for r in entry.files if not (r.path == rel and r.created)]
    old_nested = set(before.nested) if before is not None else None
    for rel in after.nested:
        if old_nested is not None and rel not in old_nested:
            out.append([rel + "/", "created; a nested git repository, whose files monkey does not record"])
            continue
        changed = changed_inside(rel) if changed_inside is not None else _changed_inside(workspace / rel, since)
        if changed:
            out.append(
                [
                    rel + "/",
                    f"changed inside ({rel}/{changed}); a nested git repository, whose files monkey does not record",
                ]
            )
    for rel in sorted((old_nested or set()) - set(after.nested)):
        gone = not os.path.lexists(workspace / rel / ".git")
        out.append(
            [
                rel + "/",
                ("deleted" if gone else "no longer a repository")
                + "; a nested git repository, whose files monkey does not record",
            ]
        )
    entry.unrecorded = out
    if before is not None:
        old_empty = set(before.empty)
        new = [rel for rel in after.empty if rel not in old_empty]
        for rel in new:
            if rel.rpartition("/")[0] not in new:  # the outermost folder the call created
                entry.files.append(FileRecord(rel + "/", None, 0, None, 0, created_dirs=[rel], exact_mode=False))


def _changed_inside(root: Path, since: float) -> str:
    """The first path below ``root`` (its ``.git`` aside) whose inode changed at or after ``since``."""
    try:
        if os.lstat(root).st_ctime >= since:
            return "."
    except OSError:
        return ""
    seen = 0
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            seen += 1
            full = os.path.join(folder, name)
            try:
                if os.lstat(full).st_ctime >= since:
                    return os.path.relpath(full, root)
            except OSError:
                continue
            if seen >= NESTED_WALK_LIMIT:
                return ""
    return ""
