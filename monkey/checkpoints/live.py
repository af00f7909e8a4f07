"""A whole-tree snapshot kept current from the write watch: a shell command's checkpoint
costs what changed, not the size of the workspace.

A full snapshot (``ShadowRepo.snapshot``) asks git to look at every file, so around a
shell command it costs the same at every call however little the command did. Where the
write watch runs (``watch``), every write in the workspace since a snapshot is known: a
:class:`LiveTree` keeps the last snapshot's tree and brings it up to date by reading only
the paths written since (their content, or their absence) and rewriting the tree along
them (``trees``). It answers exactly what a full snapshot would at that moment:

- the ignore rules decide for paths the tree did not hold (``git ls-files`` over just those
  paths, with no index), tracked files stay whatever the rules say, files over the size
  limit keep their old content in the tree and are listed with their stat signature;
- folders the snapshot could not hold are kept up to date: the empty ones around the
  paths written, nested repositories (a change inside one is judged by the watch);
- the workspace's own ``.git`` is never read.

Where it cannot be sure it would give the same answer, it says so (``current`` returns
None) and the guard takes a full snapshot instead: writes forgotten (too many, a queue
overflow), a repository made, moved or removed inside the workspace, a ``.gitignore``
changed (the rules changed for paths nobody wrote), a file with several hard links written
(its other names had no event), too many paths at once; and always on a filesystem whose
writes may come from elsewhere (a network one) or with another filesystem mounted inside
the workspace (the watch sees only the workspace's own).
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
from dataclasses import replace

from monkey.checkpoints.shadow import Outside, ShadowRepo, folders_below
from monkey.checkpoints.trees import Leaf, Trees
from monkey.checkpoints.watch import WriteWatch

__all__ = ["LiveTree", "MAX_PATHS"]

MAX_PATHS = 5000
"""More paths written than this since the last snapshot: a full snapshot is as cheap."""

_LOCAL = {0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010, 0xCA451A4E, 0x2FC12FC1}
"""Filesystems (statfs magic) whose every write goes through this kernel: ext2-4, xfs, btrfs,
tmpfs, f2fs, bcachefs, zfs."""


class _Unsure(Exception):
    """The tree cannot be brought up to date from the writes seen; take a full snapshot."""


class LiveTree:
    """The workspace's whole tree as of a write number, brought forward by the writes since."""

    def __init__(self, trees: Trees, watch: WriteWatch, max_size: int) -> None:
        self.trees = trees
        self.shadow: ShadowRepo = trees.shadow
        self.watch = watch
        self.max_size = max_size
        self._base: tuple[str, Outside, int] | None = None
        self.usable = _local(str(self.shadow.workspace))
        """Whether the filesystem's writes are all seen (else every snapshot is a full one)."""
        self.unsure = ""
        """Why the last :meth:`current` could not answer ("" it could): a full snapshot was taken instead."""

    def reset(self, tree: str, outside: Outside, seq: int) -> None:
        """After a full snapshot taken once the writes up to ``seq`` had been read."""
        self._base = (tree, _copy(outside), seq)
        self.watch.forget_links()
        self.watch.trim(seq)

    def current(self, upto: int) -> tuple[str, Outside] | None:
        """The tree and what it cannot hold, with every write before ``upto`` in; None: unsure
        (:attr:`unsure` says why)."""
        try:
            got = self._bring_forward(upto)
        except _Unsure as e:
            self.unsure = str(e)
            return None
        except OSError as e:
            self.unsure = f"a written path could not be read: {e}"
            return None
        self.unsure = ""
        return got

    def _bring_forward(self, upto: int) -> tuple[str, Outside]:
        if self._base is None:
            raise _Unsure("no snapshot to bring forward yet")
        if not self.usable:
            raise _Unsure("the filesystem's writes may come from elsewhere")
        if _mounts_inside(str(self.shadow.workspace)):
            raise _Unsure("another filesystem is mounted inside the workspace")
        tree, outside, seq = self._base
        if upto < seq:
            raise _Unsure("the writes asked for are older than the snapshot")
        changed = self.watch.changes(seq, upto)
        if isinstance(changed, str):
            raise _Unsure(changed)
        files, folders = changed
        if len(files) + len(folders) > MAX_PATHS:
            raise _Unsure(f"over {MAX_PATHS} paths written")
        tree, outside = _Update(self, tree, _copy(outside)).apply(files, folders)
        self._base = (tree, outside, upto)
        self.watch.trim(upto)
        return tree, _copy(outside)


class _Update:
    """One bringing forward: the paths read, the tree's new leaves, the folders to look at."""

    def __init__(self, live: LiveTree, tree: str, outside: Outside) -> None:
        self.live = live
        self.trees = live.trees
        self.ws = live.shadow.workspace
        self.tree = tree
        self.outside = outside
        self.nested = set(outside.nested)
        self.changes: dict[str, Leaf | None] = {}
        self.seen: set[str] = set()
        self._real: dict[str, bool] = {}

    def apply(self, files: set[str], folders: set[str]) -> tuple[str, Outside]:
        wanted: set[str] = {rel for rel in files if self._ours(rel)}
        for folder in folders:
            if self._ours(folder, folder=True):
                wanted.add(folder)
                wanted.update(self.trees.files_under(self.tree, folder))
                wanted.update(b for b in self.outside.big if b.startswith(folder + "/"))
        if len(wanted) > 4 * MAX_PATHS:
            raise _Unsure(f"over {4 * MAX_PATHS} paths under the folders written")
        new: list[str] = []
        dirs: set[str] = set()
        for rel in sorted(wanted):
            st = self._lstat(rel)
            if st is None or stat.S_ISDIR(st.st_mode):
                self.changes[rel] = None  # no file there (a folder's files are paths of their own)
                self.outside.big.pop(rel, None)
                self.seen.add(rel)
                if st is not None:
                    dirs.add(rel)
            elif self.trees.is_file(self.tree, rel):
                self._read(rel, st)  # tracked: kept whatever the ignore rules say
            else:
                new.append(rel)
        outer = {d for d in dirs if not _under_any(d, dirs)}
        found = self.live.shadow.untracked(
            [p for p in new if not _under_any(p, outer)] + [d + "/" for d in sorted(outer)]
        )
        for rel in found:
            if rel.endswith("/"):
                raise _Unsure("a repository in a new folder")
            st = self._lstat(rel)
            if st is not None and rel not in self.seen:
                self._read(rel, st)
        for rel in new:
            if rel not in self.seen:
                self.outside.big.pop(rel, None)  # ignored (or gone): not in a snapshot
                self.seen.add(rel)
        tree = self.trees.update(
            self.tree, {k: v for k, v in self.changes.items() if v != self.trees.lookup(self.tree, k)}
        )
        self._empty_folders(tree, outer, found)
        return tree, self.outside

    def _ours(self, rel: str, *, folder: bool = False) -> bool:
        """Whether a written path is one a snapshot holds (raises _Unsure when it cannot say)."""
        parts = rel.split("/")
        if parts[0] == ".git":
            return False  # the workspace's own repository
        if ".git" in parts:
            if "/".join(parts[: parts.index(".git")]) in self.nested:
                return False  # inside a nested repository: the watch says it changed
            raise _Unsure("a repository made or removed")
        if any(rel.startswith(n + "/") for n in self.nested):
            return False
        if folder and any(n == rel or n.startswith(rel + "/") for n in self.nested):
            raise _Unsure("a nested repository moved or removed")
        if parts[-1] == ".gitignore":
            raise _Unsure("a .gitignore changed (the rules changed for paths nobody wrote)")
        return True

    def _lstat(self, rel: str) -> os.stat_result | None:
        """The path's own stat, None when absent or below something that is not a real folder."""
        parent = rel.rpartition("/")[0]
        if parent and not self._real_folder(parent):
            return None
        try:
            return os.lstat(self.ws / rel)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _real_folder(self, rel: str) -> bool:
        known = self._real.get(rel)
        if known is None:
            path = str(self.ws / rel)
            known = self._real[rel] = os.path.realpath(path) == path and os.path.isdir(path)
        return known

    def _read(self, rel: str, st: os.stat_result) -> None:
        """Put a file's content in the tree the way git's snapshot does."""
        self.seen.add(rel)
        if stat.S_ISREG(st.st_mode):
            if st.st_nlink > 1:
                raise _Unsure("a file with several hard links written (its other names had no event)")
            if st.st_size > self.live.max_size:
                self.outside.big[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                return  # the tree keeps what it had, as a snapshot's index does
            fd = os.open(self.ws / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
            mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
        elif stat.S_ISLNK(st.st_mode):
            data, mode = os.fsencode(os.readlink(self.ws / rel)), "120000"
        else:
            return  # a socket, a fifo: left as the tree has it
        self.outside.big.pop(rel, None)
        self.changes[rel] = (mode, self.live.shadow.store_blob(data))

    def _empty_folders(self, tree: str, listed: set[str], found: list[str]) -> None:
        """Bring the untracked folders with no file in them up to date around the paths read."""
        tops: set[str] = set()
        for rel in self.seen | listed:
            top = self._untracked_top(tree, rel)
            if top:
                tops.add(top)
        tops = {t for t in tops if not _under_any(t, tops)}
        if not tops:
            return
        self.outside.empty = [e for e in self.outside.empty if e not in tops and not _under_any(e, tops)]
        there = sorted(t for t in tops if self._real_folder(t))
        files = set(found)
        unlisted = [t + "/" for t in there if t not in listed]
        for rel in self.live.shadow.untracked(unlisted) if unlisted else []:
            if rel.endswith("/"):
                raise _Unsure("a repository in a folder")
            files.add(rel)
        bare = [t for t in there if not any(f.startswith(t + "/") for f in files)]
        visible = set(self.live.shadow.untracked([t + "/" for t in bare], folders=True)) if bare else set()
        for top in bare:
            if top + "/" in visible:
                self.outside.empty += folders_below(self.ws, top)

    def _untracked_top(self, tree: str, rel: str) -> str:
        """The outermost path at or above ``rel`` that is no folder of ``tree`` ("" when ``rel``
        is one): where an untracked folder starts, if one does."""
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            if not self.trees.is_dir(tree, folder):
                return folder
        return ""


def _local(path: str) -> bool:
    """Whether ``path`` is on a filesystem of :data:`_LOCAL` (Linux statfs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)
        if libc.statfs(os.fsencode(path), buf) != 0:
            return False
    except (OSError, AttributeError):
        return False
    return ctypes.c_long.from_buffer(buf).value in _LOCAL


def _mounts_inside(workspace: str) -> bool:
    """Whether another filesystem is mounted below the workspace (its writes are not watched)."""
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return True
    below = os.fsencode(workspace) + b"/"
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), fields[4])
            if point.startswith(below):
                return True
    return False


def _under_any(rel: str, folders: set[str]) -> bool:
    """Whether ``rel`` lies strictly below one of ``folders``."""
    parts = rel.split("/")
    return any("/".join(parts[:i]) in folders for i in range(1, len(parts)))


def _copy(outside: Outside) -> Outside:
    return replace(outside, big=dict(outside.big), nested=list(outside.nested), empty=list(outside.empty))
