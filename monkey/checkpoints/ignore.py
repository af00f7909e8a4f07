"""The same ignore rules before and after a command, when the command changes ``.gitignore``.

A whole-tree snapshot honours the workspace's ``.gitignore`` files, read as they are on disk.
A command that edits one would otherwise change the rules between the snapshot before and
the one after: files ignored before (``.env``, build output) would show up as "created" and
an undo would delete them; files the command created under a path the new rules ignore would
be missed. :func:`reconcile` evaluates the rules of the snapshot before (the ``.gitignore``
files of the before tree, checked in a small mirror folder with ``git check-ignore``) and
puts the entry right: the ``.gitignore`` change itself stays recorded.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from monkey.checkpoints.gitrun import run_git
from monkey.checkpoints.journal import Entry, FileRecord
from monkey.checkpoints.shadow import ShadowRepo

__all__ = ["touches_gitignore", "reconcile"]


def touches_gitignore(records: list[FileRecord]) -> bool:
    """Whether the change set changes an ignore file."""
    return any(r.path == ".gitignore" or r.path.endswith("/.gitignore") for r in records)


def ignored_by(shadow: ShadowRepo, tree: str, paths: list[str]) -> set[str]:
    """Which of ``paths`` the ``.gitignore`` files of ``tree`` ignore."""
    if not paths:
        return set()
    mirror = shadow.root / f"ignore-rules-{os.getpid()}"
    shutil.rmtree(mirror, ignore_errors=True)
    mirror.mkdir(parents=True)
    try:
        listing = shadow.git("ls-tree", "-r", "-z", tree, work_tree=False)
        for item in listing.split(b"\x00"):
            if b"\t" not in item:
                continue
            meta, raw = item.split(b"\t", 1)
            if raw != b".gitignore" and not raw.endswith(b"/.gitignore"):
                continue
            target = mirror / os.fsdecode(raw)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(shadow.read_blob(meta.split()[2].decode()))
        out = run_git(
            shadow.git_dir,
            mirror,
            ["check-ignore", "--no-index", "-z", "--stdin"],
            input=b"".join(b"./" + os.fsencode(p) + b"\x00" for p in paths),
            check=False,
            literal=False,
        )
    finally:
        shutil.rmtree(mirror, ignore_errors=True)
    return {os.fsdecode(p.removeprefix(b"./")) for p in out.split(b"\x00") if p}  # "./": never pathspec magic


def reconcile(shadow: ShadowRepo, entry: Entry, max_size: int) -> str:
    """Judge ``entry``'s whole-tree change by the ignore rules of its snapshot before.

    Files the old rules ignored are not "created" (they were there, unseen); files the new
    rules ignore but the old ones did not, made by the command, are recorded. Returns a note.
    """
    created = [r.path for r in entry.files if r.created]
    hidden = ignored_by(shadow, entry.before_tree, created)
    entry.files = [r for r in entry.files if r.path not in hidden]
    out = shadow.git("ls-files", "-z", "-o", "-i", "--exclude-standard")
    candidates = [os.fsdecode(p) for p in out.split(b"\x00") if p and not p.endswith(b"/")]
    known = {r.path for r in entry.files}
    visible_before = set(candidates) - ignored_by(shadow, entry.before_tree, candidates) - known
    added = []
    for rel in sorted(visible_before):
        try:
            st = os.lstat(shadow.workspace / rel)
            if stat.S_ISLNK(st.st_mode):
                data = os.fsencode(os.readlink(shadow.workspace / rel))
            elif stat.S_ISREG(st.st_mode) and st.st_size <= max_size:
                data = Path(shadow.workspace / rel).read_bytes()
            else:
                continue
        except OSError:
            continue
        entry.files.append(FileRecord(rel, None, 0, shadow.store_blob(data), st.st_mode, exact_mode=False))
        added.append(rel)
    notes = []
    if hidden:
        notes.append(
            "the command changed .gitignore; files the old rules ignored are not counted as created: "
            + ", ".join(sorted(hidden))
        )
    if added:
        notes.append("recorded under the old .gitignore rules: " + ", ".join(added))
    return "; ".join(notes)
