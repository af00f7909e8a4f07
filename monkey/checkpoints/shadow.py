"""The shadow repository: a git repository owned by monkey for one workspace.

It lives under ``<monkey home>/checkpoints/<workspace key>/git`` with its own index; the
workspace is its work tree. Per-edit checkpoints never start a process: blobs, trees and
commits are written straight into the object database with gitdb (GitPython's object
store), so their cost follows the size of the change. Whole-tree snapshots (before and
after a shell command) use the shadow index and git's stat cache, so they only hash what
changed since the last snapshot.

``info/attributes`` in the shadow repository switches off every content conversion
(end-of-line, filters, ident, encodings) whatever the workspace's ``.gitattributes`` say,
so what is stored is byte-for-byte what was on disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

from monkey.checkpoints.gitrun import HARDENING, GitError, run_git

__all__ = [
    "ShadowRepo",
    "TreeChange",
    "Outside",
    "workspace_key",
    "blob_sha",
    "git_mode",
    "folders_below",
    "EMPTY_TREE",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !eol !diff !merge -export-subst\n"
_REF_PREFIX = "refs/monkey/"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def workspace_key(workspace: Path) -> str:
    """The folder name of a workspace's shadow repository: readable name + path hash."""
    resolved = str(workspace.resolve())
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", workspace.resolve().name)[:40] or "root"
    return f"{name}-{digest}"


def blob_sha(data: bytes) -> str:
    """The git blob id of ``data`` (nothing is stored)."""
    h = hashlib.sha1(b"blob %d\x00" % len(data))
    h.update(data)
    return h.hexdigest()


def git_mode(mode: int) -> str:
    """The git tree mode of a file mode: 120000, 100755 or 100644."""
    if stat.S_ISLNK(mode):
        return "120000"
    return "100755" if mode & 0o111 else "100644"


@dataclass
class Outside:
    """What a whole-tree snapshot cannot hold."""

    big: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Files over the size limit -> (size, mtime_ns, ctime_ns, inode)."""
    nested: list[str] = field(default_factory=list)
    """Nested git repositories (folders holding a ``.git``)."""
    empty: list[str] = field(default_factory=list)
    """Untracked folders with no file in them (empty, or holding only ignored files), and every
    folder inside them (up to a thousand per tree)."""

    @property
    def skipped(self) -> list[str]:
        """The files left out for their size."""
        return list(self.big)


@dataclass(frozen=True)
class TreeChange:
    """One path that differs between two trees (``None`` sha: absent on that side)."""

    path: str
    old_mode: int
    old_sha: str | None
    new_mode: int
    new_sha: str | None


class ShadowRepo:
    """The shadow git repository of one workspace."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace.resolve()
        """The work tree."""
        self.root = Path(os.path.abspath(home)) / "checkpoints" / workspace_key(self.workspace)
        """The folder holding the git dir, the lock and the owner locks."""
        self.git_dir = self.root / "git"
        self._odb: Any = None

    # -- setup and locking -----------------------------------------------------------

    def exists(self) -> bool:
        """Whether the repository has been created."""
        return (self.git_dir / "HEAD").is_file()

    def ensure(self) -> None:
        """Create the repository on first use (safe against a concurrent creator)."""
        if self.exists():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        with self.locked():
            if self.exists():
                return
            tmp = self.root / f"git.init-{os.getpid()}"
            run_git(tmp, None, ["init", "-q", "--template="], timeout=60)
            cfg = [(k, v) for k, v in HARDENING if v] + [("core.bare", "false")]
            for key, value in cfg:
                run_git(tmp, None, ["config", key, value], timeout=60)
            (tmp / "info").mkdir(exist_ok=True)
            (tmp / "info" / "attributes").write_text(_ATTRIBUTES)
            (tmp / "info" / "exclude").write_text("")
            (self.root / "workspace").write_text(str(self.workspace) + "\n")
            os.replace(tmp, self.git_dir)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the repository's lock (index, refs, objects) across processes."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def clear_stale_lock(self, *, wait: float = 2.0) -> str:
        """Remove an ``index.lock`` a killed git left behind (call it holding :meth:`locked`).

        Every git command monkey runs here holds :meth:`locked`, so a lock file found while
        holding it was left by a process that died, unless a live process (an orphaned git)
        still has it open: then it is waited for a moment and, if still held, a GitError
        names the holder. Returns a message when a stale lock was removed.
        """
        lock = self.git_dir / "index.lock"
        deadline = time.monotonic() + wait
        while os.path.lexists(lock):
            holders = _open_by(lock)
            if not holders:
                try:
                    os.unlink(lock)
                except FileNotFoundError:
                    return ""
                return f"removed a stale lock of the shadow repository ({lock}) left by a stopped monkey"
            if time.monotonic() >= deadline:
                raise GitError(
                    f"the shadow repository's index is locked by a running process (pid "
                    f"{', '.join(map(str, holders))}): {lock}"
                )
            time.sleep(0.05)
        return ""

    def git(self, *args: str, input: bytes | None = None, work_tree: bool = True) -> bytes:
        """Run a hardened git command in the shadow repository."""
        return run_git(self.git_dir, self.workspace if work_tree else None, args, input=input)

    # -- objects ---------------------------------------------------------------------

    @property
    def odb(self) -> Any:
        """The object database (gitdb), opened on first use."""
        if self._odb is None:
            from gitdb import GitDB

            self._odb = GitDB(str(self.git_dir / "objects"))
        return self._odb

    def store_object(self, kind: bytes, data: bytes) -> str:
        """Store an object (``b"blob"``, ``b"tree"``, ``b"commit"``); returns its id."""
        from gitdb import IStream

        return self.odb.store(IStream(kind, len(data), BytesIO(data))).hexsha.decode()

    def store_blob(self, data: bytes) -> str:
        """Store file content; returns its blob id."""
        sha = blob_sha(data)
        if not self.has(sha):
            self.store_object(b"blob", data)
        return sha

    def has(self, sha: str) -> bool:
        """Whether an object is stored."""
        try:
            return bool(self.odb.has_object(bytes.fromhex(sha)))
        except Exception:
            return False

    def read_blob(self, sha: str) -> bytes:
        """The content of a stored blob (a GitError when it is gone)."""
        return self.read_object(sha)

    def read_object(self, sha: str) -> bytes:
        """The content of a stored object (a GitError when it is gone)."""
        try:
            stream = self.odb.stream(bytes.fromhex(sha))
        except Exception as exc:
            raise GitError(f"object {sha} is missing from the shadow repository: {exc}") from None
        return stream.read()

    def write_tree(self, entries: dict[str, tuple[str, str]]) -> str:
        """Store a tree of ``path -> (git mode, blob id)``; nested folders included."""
        nested: dict[str, Any] = {}
        for path, leaf in entries.items():
            node = nested
            *dirs, name = path.split("/")
            for part in dirs:
                node = node.setdefault(part, {})
            node[name] = leaf
        return self._write_level(nested)

    def _write_level(self, node: dict[str, Any]) -> str:
        items = []
        for name, value in node.items():
            if isinstance(value, dict):
                items.append((name + "/", name, "40000", self._write_level(value)))
            else:
                items.append((name, name, value[0], value[1]))
        items.sort(key=lambda t: os.fsencode(t[0]))
        body = b"".join(
            mode.encode() + b" " + os.fsencode(name) + b"\x00" + bytes.fromhex(sha) for _, name, mode, sha in items
        )
        return self.store_object(b"tree", body)

    def commit(self, tree: str, message: str, parent: str | None = None) -> str:
        """Store a commit of ``tree`` (no config read, no hooks, no signing)."""
        now = int(time.time())
        who = f"monkey <monkey@localhost> {now} +0000"
        lines = [f"tree {tree}"] + ([f"parent {parent}"] if parent else [])
        lines += [f"author {who}", f"committer {who}", "", message.strip() or "checkpoint", ""]
        return self.store_object(b"commit", "\n".join(lines).encode("utf-8", "surrogateescape"))

    def set_ref(self, name: str, sha: str) -> None:
        """Point ``refs/monkey/<name>`` at a commit (keeps it from garbage collection)."""
        if not _SAFE_ID.match(name):
            raise GitError(f"bad checkpoint id {name!r}")
        path = self.git_dir / _REF_PREFIX / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(sha + "\n")
        os.replace(tmp, path)

    def delete_refs(self, names: Iterable[str]) -> None:
        """Drop checkpoint refs (loose or packed)."""
        lines = "".join(f"delete {_REF_PREFIX}{n}\n" for n in names if _SAFE_ID.match(n))
        if lines:
            self.git("update-ref", "--stdin", input=lines.encode(), work_tree=False)

    # -- whole-tree snapshots --------------------------------------------------------

    def snapshot(self, max_size: int) -> tuple[str, Outside]:
        """Bring the shadow index up to date with the workspace and store its tree.

        Honours the workspace's .gitignore files; files over ``max_size`` bytes are left
        out. Returns the tree id and what the tree cannot hold: the files left out for their
        size (with their stat signature), nested repositories and empty folders.
        """
        self.clear_stale_lock()
        out = self.git("ls-files", "-z", "-m", "-d", "-o", "--directory", "--exclude-standard")
        update: list[bytes] = []
        outside = Outside()
        folders = [raw for raw in out.split(b"\x00") if raw.endswith(b"/")]
        if folders:  # untracked folders with nothing in the index: a nested repository, new or empty
            plain = []
            for raw in folders:
                if os.path.lexists(os.path.join(self.workspace, os.fsdecode(raw), ".git")):
                    outside.nested.append(os.fsdecode(raw[:-1]))
                else:
                    plain.append(raw)
            if plain:
                inner = self.git("ls-files", "-z", "-o", "--exclude-standard", "--", *(os.fsdecode(r) for r in plain))
                out += b"\x00" + inner
                found = [raw for raw in inner.split(b"\x00") if raw]
                outside.nested += [os.fsdecode(raw[:-1]) for raw in found if raw.endswith(b"/")]
                for r in plain:
                    if not any(f.startswith(r) for f in found):
                        outside.empty += folders_below(self.workspace, os.fsdecode(r[:-1]))
        for raw in dict.fromkeys(out.split(b"\x00")):
            if not raw or raw.endswith(b"/"):
                continue
            rel = os.fsdecode(raw)
            try:
                st = os.lstat(self.workspace / rel)
            except FileNotFoundError:
                update.append(raw)
                continue
            except OSError:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue
            if st.st_size > max_size:
                outside.big[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                continue
            update.append(raw)
        if update:
            self.git(
                "update-index", "-z", "--add", "--remove", "--replace", "--stdin", input=b"\x00".join(update) + b"\x00"
            )
        tree = self.git("write-tree").decode().strip()
        return tree, outside

    def untracked(self, paths: list[str], *, folders: bool = False) -> list[str]:
        """What a snapshot would see of ``paths`` (files, and folders ending with ``/``) if none of
        them were tracked: the files that the ignore rules leave (nested repositories as ``dir/``),
        or with ``folders`` the folders they leave, as ``dir/``. The shadow index is not read."""
        if not paths:
            return []
        args = ["ls-files", "-z", "-o", "--exclude-standard"] + (["--directory"] if folders else [])
        out = run_git(self.git_dir, self.workspace, [*args, "--", *paths], index=self.git_dir / "index.none")
        return [os.fsdecode(raw) for raw in out.split(b"\x00") if raw]

    def diff_trees(self, old: str, new: str) -> list[TreeChange]:
        """Every file that differs between two trees."""
        if old == new:
            return []
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-ext-diff", old, new, work_tree=False)
        parts = out.split(b"\x00")
        changes: list[TreeChange] = []
        i = 0
        while i + 1 < len(parts):
            meta, raw = parts[i], parts[i + 1]
            i += 2
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, old_sha, new_sha, _ = meta[1:].decode().split(" ", 4)
            zero = "0" * 40
            changes.append(
                TreeChange(
                    os.fsdecode(raw),
                    int(old_mode, 8),
                    None if old_sha == zero else old_sha,
                    int(new_mode, 8),
                    None if new_sha == zero else new_sha,
                )
            )
        return changes

    # -- housekeeping ----------------------------------------------------------------

    def size(self) -> int:
        """Bytes the repository takes on disk."""
        total = 0
        for folder, _, files in os.walk(self.git_dir):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
        return total

    def gc(self) -> None:
        """Repack and drop every object no checkpoint (or the index) still needs."""
        self._odb = None
        self.git("gc", "--prune=now", "--quiet", work_tree=False)


def _open_by(path: Path) -> list[int]:
    """Pids of live processes that have ``path`` open (Linux /proc; elsewhere: any lock is live
    for a minute after its last change, then stale)."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        try:
            return [0] if time.time() - os.lstat(path).st_mtime < 60 else []
        except OSError:
            return []
    wanted = str(path)
    found: list[int] = []
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    if os.readlink(fd.path) == wanted:
                        found.append(int(entry.name))
                        break
                except OSError:
                    continue
    return found


def folders_below(root: Path, rel: str, limit: int = 1000) -> list[str]:
    """``rel`` and the folders below it, outermost first (at most ``limit``)."""
    out = [rel]
    for folder, dirs, _ in os.walk(root / rel):
        dirs.sort()
        for name in dirs:
            out.append(os.path.relpath(os.path.join(folder, name), root))
            if len(out) >= limit:
                return out
    return out
