"""Trees of the shadow repository read and written in process, path by path.

A whole-tree snapshot's tree holds every file of the workspace, but a change touches a few
of them. :class:`Trees` looks paths up, rewrites a tree along the changed paths only and
diffs two trees by descending only where their subtrees differ, so each costs what the
change touches (a few tree objects), never a walk of the whole tree or a git process.
Trees are read through the shadow's object database (gitdb) and kept parsed by id (a tree
id never changes its content).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from monkey.checkpoints.shadow import EMPTY_TREE, ShadowRepo, TreeChange

__all__ = ["Trees", "Leaf", "TREE_MODE"]

TREE_MODE = "40000"
"""The git mode of a subtree entry."""

Leaf = tuple[str, str]
"""A file in a tree: (git mode, blob id)."""

_CACHE = 4096
"""Parsed trees kept (by id)."""

_Node = tuple[dict[str, "Leaf | None"], dict[str, Any]]
"""One level of an update: files set (None: removed) and the folders below with their own changes."""


class Trees:
    """In-process reads and writes of the shadow repository's trees."""

    def __init__(self, shadow: ShadowRepo) -> None:
        self.shadow = shadow
        self._parsed: OrderedDict[str, dict[str, Leaf]] = OrderedDict()

    def entries(self, tree: str) -> dict[str, Leaf]:
        """``name -> (mode, id)`` of one tree (subtrees have mode ``40000``)."""
        if tree == EMPTY_TREE:
            return {}
        cached = self._parsed.get(tree)
        if cached is not None:
            self._parsed.move_to_end(tree)
            return cached
        data = self.shadow.read_object(tree)
        out: dict[str, Leaf] = {}
        i = 0
        while i < len(data):
            space = data.index(b" ", i)
            nul = data.index(b"\x00", space)
            mode = data[i:space].decode()
            out[os.fsdecode(data[space + 1 : nul])] = (mode, data[nul + 1 : nul + 21].hex())
            i = nul + 21
        self._parsed[tree] = out
        if len(self._parsed) > _CACHE:
            self._parsed.popitem(last=False)
        return out

    def lookup(self, tree: str, path: str) -> Leaf | None:
        """What ``path`` is in ``tree`` (a file's leaf, ``("40000", id)`` for a folder), or None."""
        if not path:
            return (TREE_MODE, tree)
        node: Leaf = (TREE_MODE, tree)
        for part in path.split("/"):
            if node[0] != TREE_MODE:
                return None
            found = self.entries(node[1]).get(part)
            if found is None:
                return None
            node = found
        return node

    def is_file(self, tree: str, path: str) -> bool:
        """Whether ``tree`` holds a file at ``path``."""
        leaf = self.lookup(tree, path)
        return leaf is not None and leaf[0] != TREE_MODE

    def is_dir(self, tree: str, path: str) -> bool:
        """Whether ``tree`` holds a folder (with files in it) at ``path``; the root always."""
        leaf = self.lookup(tree, path)
        return leaf is not None and leaf[0] == TREE_MODE

    def files_under(self, tree: str, path: str) -> list[str]:
        """Every file of ``tree`` at or below ``path``."""
        leaf = self.lookup(tree, path)
        if leaf is None:
            return []
        if leaf[0] != TREE_MODE:
            return [path]
        out: list[str] = []
        stack = [(path, leaf[1])]
        while stack:
            prefix, sha = stack.pop()
            for name, (mode, sub) in self.entries(sha).items():
                rel = f"{prefix}/{name}" if prefix else name
                if mode == TREE_MODE:
                    stack.append((rel, sub))
                else:
                    out.append(rel)
        return out

    # -- writing ---------------------------------------------------------------------

    def update(self, tree: str, changes: dict[str, Leaf | None]) -> str:
        """``tree`` with each path set to its leaf (None: no file there); folders left with
        nothing in them disappear, as git never stores an empty tree."""
        root: _Node = ({}, {})
        for path, leaf in changes.items():
            node = root
            *dirs, name = path.split("/")
            for part in dirs:
                node = node[1].setdefault(part, ({}, {}))
            node[0][name] = leaf
        return self._update(tree, root) or EMPTY_TREE

    def _update(self, tree: str | None, node: _Node) -> str | None:
        files, dirs = node
        items = dict(self.entries(tree)) if tree else {}
        for name, sub in dirs.items():
            current = items.get(name)
            new = self._update(current[1] if current and current[0] == TREE_MODE else None, sub)
            if new is not None:
                items[name] = (TREE_MODE, new)
            elif current is not None and current[0] == TREE_MODE:
                del items[name]
        for name, leaf in files.items():
            current = items.get(name)
            if leaf is None:
                if current is not None and current[0] != TREE_MODE:
                    del items[name]
            elif current is None or current[0] != TREE_MODE or name not in dirs:
                items[name] = leaf  # a file where a folder was: the folder's files went with it
        if not items:
            return None
        if tree and items == self.entries(tree):
            return tree
        return self.write(items)

    def write(self, items: dict[str, Leaf]) -> str:
        """Store one tree level; returns its id."""

        def key(name: str) -> bytes:
            raw = os.fsencode(name)
            return raw + b"/" if items[name][0] == TREE_MODE else raw

        body = b"".join(
            items[name][0].encode() + b" " + os.fsencode(name) + b"\x00" + bytes.fromhex(items[name][1])
            for name in sorted(items, key=key)
        )
        sha = self.shadow.store_object(b"tree", body)
        self._parsed[sha] = dict(items)
        return sha

    # -- comparing -------------------------------------------------------------------

    def diff(self, old: str, new: str) -> list[TreeChange]:
        """Every file that differs between two trees, in path order (as ``git diff-tree -r``)."""
        out: list[TreeChange] = []
        self._diff(old, new, "", out)
        out.sort(key=lambda c: os.fsencode(c.path))
        return out

    def _diff(self, old: str | None, new: str | None, prefix: str, out: list[TreeChange]) -> None:
        if old == new:
            return
        a = self.entries(old) if old else {}
        b = self.entries(new) if new else {}
        for name in a.keys() | b.keys():
            ea, eb = a.get(name), b.get(name)
            if ea == eb:
                continue
            path = f"{prefix}{name}"
            a_dir = ea is not None and ea[0] == TREE_MODE
            b_dir = eb is not None and eb[0] == TREE_MODE
            if a_dir or b_dir:
                self._diff(ea[1] if a_dir and ea else None, eb[1] if b_dir and eb else None, path + "/", out)
            a_file = ea if ea is not None and not a_dir else None
            b_file = eb if eb is not None and not b_dir else None
            if a_file or b_file:
                out.append(
                    TreeChange(
                        path,
                        int(a_file[0], 8) if a_file else 0,
                        a_file[1] if a_file else None,
                        int(b_file[0], 8) if b_file else 0,
                        b_file[1] if b_file else None,
                    )
                )
