"""The file tools: read, write, edit and delete files, and list a directory.

Every path goes through the workspace guard. Changes are planned first (the bytes before
and after), so the approval prompt, the checkpoint and the run all see the same change;
writes are atomic and keep the file's permission bits.
"""

from __future__ import annotations

from abc import abstractmethod

import asyncio
import difflib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from monkey.tools.base import Edit, Tool, ToolContext, ToolError, ToolOutcome
from monkey.tools.fileio import (
    BIG_FILE,
    SNIFF_BYTES,
    atomic_write,
    describe_size,
    looks_binary,
    read_exact,
    unified_diff,
)
from monkey.tools.workspace import is_protected_name, relative, resolve_path

__all__ = ["FileRead", "FileWrite", "FileEdit", "FileDelete", "ListDirectory"]

READ_LINES = 2000
"""Lines ``file_read`` gives back when no limit is asked for."""
LIST_LIMIT = 1000
"""Entries ``list_directory`` shows at most."""

T = TypeVar("T")
PathArg = Annotated[str, msgspec.Meta(description="Path relative to the workspace root.")]


def _target(ctx: ToolContext, path: str, *, for_write: bool, follow_final: bool = True) -> tuple[Path, str]:
    target = resolve_path(ctx.workspace, path, for_write=for_write, follow_final=follow_final)
    return target, relative(ctx.workspace, target)


def _not_found(target: Path, rel: str) -> ToolError:
    """A 'does not exist' error that names similar entries of the parent directory."""
    try:
        names = [n for n in os.listdir(target.parent) if not is_protected_name(n)]
    except OSError:
        return ToolError(f"{rel} does not exist (nor does its directory)")
    close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.6)
    hint = f"; similar names there: {', '.join(close)}" if close else ""
    return ToolError(f"{rel} does not exist{hint}")


def _stat_file(target: Path, rel: str) -> os.stat_result:
    """The stat of an existing regular file, or a ToolError that says what it is instead."""
    try:
        st = target.stat()
    except FileNotFoundError:
        raise _not_found(target, rel) from None
    except OSError as exc:
        raise ToolError(f"cannot read {rel}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{rel} is a directory; use list_directory to see what is in it")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{rel} is not a regular file")
    return st


async def _blocking(size: int, fn: Callable[..., T], *args: Any) -> T:
    """Run file IO inline when it is small, in a worker thread when it may be slow."""
    if size >= BIG_FILE:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


# ---------------------------------------------------------------------------- file_read


class ReadArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of file_read."""

    path: PathArg
    offset: Annotated[int, msgspec.Meta(ge=1, description="First line to read (1-based).")] = 1
    limit: Annotated[int, msgspec.Meta(ge=1, description="How many lines to read at most.")] = READ_LINES


def _read_window(target: Path, rel: str, offset: int, limit: int, cap: int) -> str:
    """The text ``file_read`` gives back: the asked lines plus notes on what was left out."""
    with target.open("rb") as fh:
        head = fh.read(SNIFF_BYTES)
        if looks_binary(head):
            size = os.fstat(fh.fileno()).st_size
            return f"{rel}: binary file, {size} bytes, not shown"
        fh.seek(0)
        shown: list[str] = []
        chars = total = 0
        last = offset - 1
        stop = ""
        replaced = False
        for total, raw in enumerate(fh, 1):
            if total < offset:
                continue
            if len(shown) >= limit:
                stop = "limit"
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text, replaced = raw.decode("utf-8", errors="replace"), True
            if chars + len(text) > cap:
                if not shown:
                    shown.append(text[:cap])
                    last = total
                    stop = "cut"
                else:
                    stop = "cap"
                break
            shown.append(text)
            chars += len(text)
            last = total
        if stop:
            # Count the remaining lines quickly instead of decoding them.
            tail_end = b"\n"
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                total += chunk.count(b"\n")
                tail_end = chunk[-1:]
            if tail_end != b"\n":
                total += 1
    if total == 0:
        return f"[{rel} is empty]"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {rel}, which has {total} lines")
    body = "".join(shown)
    notes = []
    if replaced:
        notes.append("[not valid UTF-8: undecodable bytes are shown as U+FFFD]")
    if stop == "cut":
        notes.append(f"[line {last} is longer than {cap} characters and was cut; use grep_search to find text in it]")
    if last < total:
        why = f" (output limit of {cap} characters reached)" if stop == "cap" else ""
        notes.append(f"[lines {offset}-{last} of {total}{why}; pass offset={last + 1} to read on]")
    elif offset > 1:
        notes.append(f"[lines {offset}-{last} of {total}]")
    if notes:
        body += ("" if not body or body.endswith("\n") else "\n") + "\n".join(notes)
    return body


class FileRead(Tool[ReadArgs]):
    """Read a text file, or part of it, by lines."""

    name = "file_read"
    Args = ReadArgs

    async def run(self, args: ReadArgs, ctx: ToolContext) -> ToolOutcome:
        """Give back the asked lines of the file."""
        target, rel = _target(ctx, args.path, for_write=False)
        _stat_file(target, rel)
        image = await asyncio.to_thread(_read_image, target, rel)
        if image is not None:
            return image
        try:
            # Always in a thread: read-only calls run concurrently, and a read may hit slow disks.
            text = await asyncio.to_thread(_read_window, target, rel, args.offset, args.limit, ctx.read_limit)
        except OSError as exc:
            raise ToolError(f"cannot read {rel}: {exc.strerror or exc}") from None
        return ToolOutcome(output=text)


def _read_image(target: Path, rel: str) -> ToolOutcome | None:
    """An image file as the image itself (the model sees it where its backend takes images), None when
    the file is not one; ToolError when it is one that cannot be sent (over the limits)."""
    from monkey.images import ImageError, describe, info_of, load

    if info_of(target) is None:
        return None
    try:
        image, info = load(target)
    except ImageError as exc:
        raise ToolError(f"{rel} is an image that cannot be shown: {exc}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {rel}: {exc.strerror or exc}") from None
    return ToolOutcome(output=f"{rel}: {describe(info)}", images=[image])


# --------------------------------------------------------------- planned changes


@dataclass
class Change:
    """One planned change of one file: its bytes before and after (None: absent)."""

    target: Path
    rel: str
    before: bytes | None
    after: bytes | None
    summary: str = ""
    """What the change does, for the model (``created x.py (3 lines, 42 bytes)``)."""

    def diff(self) -> str:
        """A unified diff of the change ("Binary files ... differ" for binary files)."""
        old, new = self.before or b"", self.after or b""
        if old == new and (self.before is None) == (self.after is None):
            return ""
        if looks_binary(old) or looks_binary(new):
            return f"Binary files a/{self.rel} and b/{self.rel} differ\n"
        return unified_diff(
            self.rel,
            old.decode("utf-8", errors="surrogateescape"),
            new.decode("utf-8", errors="surrogateescape"),
        )

    def apply(self) -> None:
        """Make the change on disk (atomic write, or unlink)."""
        if self.after is None:
            os.unlink(self.target)
        elif self.after != self.before:
            atomic_write(self.target, self.after)

    async def run(self) -> ToolOutcome:
        """Apply the change and describe it, turning file-system errors into ToolErrors."""
        try:
            await _blocking(len(self.after or b""), self.apply)
        except OSError as exc:
            raise ToolError(f"cannot change {self.rel}: {exc.strerror or exc}") from None
        return ToolOutcome(
            output=self.summary,
            diff=self.diff(),
            paths=[self.rel],
            edits=[Edit(self.rel, self.before, self.after)] if self.before != self.after else [],
        )


def _existing_bytes(target: Path, rel: str) -> bytes | None:
    """The bytes of a file that may be replaced, None if absent; refuses directories."""
    if not target.exists():
        return None
    _stat_file(target, rel)
    try:
        return target.read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read {rel}: {exc.strerror or exc}") from None


A = TypeVar("A", bound=msgspec.Struct)


class _ChangeTool(Tool[A]):
    """A tool whose call is one planned :class:`Change` of the file named by ``args.path``."""

    dangerous = True
    read_only = False
    _follow_final = True
    """Whether a symlink named by the path is followed (False: the link itself changes)."""

    @abstractmethod
    def plan(self, args: A, ctx: ToolContext) -> Change:
        """The change a call would make; raises ToolError if it cannot be made."""

    def touched_paths(self, args: A, ctx: ToolContext) -> list[str] | None:
        """The one path the call changes (raises ToolError for a refused path)."""
        path: Any = getattr(args, "path")  # noqa: B009 (A is any struct with a path; the type checker cannot tell)
        return [_target(ctx, path, for_write=True, follow_final=self._follow_final)[1]]

    def preview(self, args: A, ctx: ToolContext) -> str:
        """The unified diff the call would apply (raises ToolError if it would fail)."""
        return self.plan(args, ctx).diff()

    async def run(self, args: A, ctx: ToolContext) -> ToolOutcome:
        """Plan the change, then apply it."""
        return await self.plan(args, ctx).run()


# ---------------------------------------------------------------------------- file_write


class WriteArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of file_write."""

    path: PathArg
    content: Annotated[str, msgspec.Meta(description="The whole new content of the file.")]


class FileWrite(_ChangeTool[WriteArgs]):
    """Create a file or replace its whole content."""

    name = "file_write"
    Args = WriteArgs

    def plan(self, args: WriteArgs, ctx: ToolContext) -> Change:
        """The write as a change; the parent directories are created when it runs."""
        target, rel = _target(ctx, args.path, for_write=True)
        before = _existing_bytes(target, rel)
        after = args.content.encode("utf-8", errors="surrogateescape")
        size = describe_size(args.content, after)
        if before is None:
            summary = f"created {rel} ({size})"
        elif before == after:
            summary = f"{rel} already had this content ({size}); nothing changed"
        else:
            summary = f"overwrote {rel} ({size})"
        return Change(target, rel, before, after, summary)


# ----------------------------------------------------------------------------- file_edit


class EditArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of file_edit."""

    path: PathArg
    old_string: Annotated[str, msgspec.Meta(description="The exact text to replace, whitespace included.")]
    new_string: Annotated[str, msgspec.Meta(description="The text to put in its place.")]
    replace_all: Annotated[bool, msgspec.Meta(description="Replace every occurrence instead of exactly one.")] = False


def _line_numbers(text: str, needle: str, limit: int = 20) -> tuple[list[int], int]:
    """Line numbers (1-based) of the first ``limit`` occurrences, and the total count."""
    lines: list[int] = []
    count = pos = last = 0
    line = 1
    while (pos := text.find(needle, pos)) != -1:
        count += 1
        if len(lines) < limit:
            line += text.count("\n", last, pos)
            last = pos
            lines.append(line)
        pos += len(needle)
    return lines, count


def _format_lines(lines: list[int], count: int) -> str:
    more = f" and {count - len(lines)} more" if count > len(lines) else ""
    return ", ".join(map(str, lines)) + more


def _whitespace_matches(text: str, old: str) -> list[int]:
    """Lines where ``old`` occurs if runs of whitespace are allowed to differ."""
    words = old.split()
    if not words:
        return []
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    lines = []
    for m in pattern.finditer(text):
        lines.append(text.count("\n", 0, m.start()) + 1)
        if len(lines) >= 20:
            break
    return lines


class FileEdit(_ChangeTool[EditArgs]):
    """Replace an exact piece of text in a file."""

    name = "file_edit"
    Args = EditArgs

    def plan(self, args: EditArgs, ctx: ToolContext) -> Change:
        """The edit as a change; refuses missing, ambiguous or empty matches."""
        old, new = args.old_string, args.new_string
        if not old:
            raise ToolError("old_string is empty; to create a file or replace all of it use file_write")
        if old == new:
            raise ToolError("old_string and new_string are the same; there is nothing to change")
        target, rel = _target(ctx, args.path, for_write=True)
        _stat_file(target, rel)
        try:
            before, text = read_exact(target)
        except OSError as exc:
            raise ToolError(f"cannot read {rel}: {exc.strerror or exc}") from None
        if looks_binary(before):
            raise ToolError(f"{rel} is a binary file; file_edit changes text files only")
        lines, count = _line_numbers(text, old)
        if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
            # The file has Windows line ends; the model wrote plain newlines.
            old = old.replace("\n", "\r\n")
            new = new.replace("\r\n", "\n").replace("\n", "\r\n")
            lines, count = _line_numbers(text, old)
        if count == 0:
            near = _whitespace_matches(text, old)
            if near:
                raise ToolError(
                    f"old_string was not found in {rel}. Text that differs from it only in "
                    f"indentation/whitespace is at line {_format_lines(near, len(near))}; "
                    "read those lines and copy them exactly, whitespace included"
                )
            raise ToolError(f"old_string was not found in {rel}; read the file again and copy the text exactly")
        if count > 1 and not args.replace_all:
            raise ToolError(
                f"old_string occurs {count} times in {rel} (lines {_format_lines(lines, count)}); "
                "include more surrounding lines to make it unique, or pass replace_all=true"
            )
        after_text = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        after = after_text.encode("utf-8", errors="surrogateescape")
        noun = "occurrence" if count == 1 else "occurrences"
        where = "line" if count == 1 else "lines"
        summary = f"edited {rel}: replaced {count} {noun} ({where} {_format_lines(lines, count)})"
        return Change(target, rel, before, after, summary)


# --------------------------------------------------------------------------- file_delete


class DeleteArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of file_delete."""

    path: PathArg


class FileDelete(_ChangeTool[DeleteArgs]):
    """Delete one file or symlink."""

    name = "file_delete"
    Args = DeleteArgs
    _follow_final = False

    def plan(self, args: DeleteArgs, ctx: ToolContext) -> Change:
        """The deletion as a change; refuses directories and missing paths."""
        target, rel = _target(ctx, args.path, for_write=True, follow_final=False)
        if target.is_symlink():
            try:
                dest = os.readlink(target)
            except OSError:
                dest = "?"
            return Change(target, rel, b"", None, f"deleted symlink {rel} (it pointed to {dest})")
        if not target.exists():
            raise _not_found(target, rel)
        if target.is_dir():
            raise ToolError(f"{rel} is a directory; file_delete deletes single files only")
        before = _existing_bytes(target, rel) or b""
        if looks_binary(before):
            summary = f"deleted binary file {rel} ({len(before)} bytes)"
        else:
            summary = f"deleted {rel} ({describe_size(before.decode('utf-8', 'replace'), before)})"
        return Change(target, rel, before, None, summary)


# ------------------------------------------------------------------------ list_directory


class ListArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of list_directory."""

    path: Annotated[str, msgspec.Meta(description="Directory relative to the workspace root; the root by default.")] = (
        "."
    )


def _list(target: Path) -> list[str]:
    entries = []
    with os.scandir(target) as it:
        for entry in it:
            if is_protected_name(entry.name):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            entries.append(entry.name + "/" if is_dir else entry.name)
    return sorted(entries)


class ListDirectory(Tool[ListArgs]):
    """List the entries of one directory."""

    name = "list_directory"
    Args = ListArgs

    async def run(self, args: ListArgs, ctx: ToolContext) -> ToolOutcome:
        """Give back the sorted entries, directories marked with a trailing slash."""
        target, rel = _target(ctx, args.path, for_write=False)
        if not target.exists():
            raise _not_found(target, rel)
        if not target.is_dir():
            raise ToolError(f"{rel} is a file, not a directory; use file_read to read it")
        try:
            entries = await asyncio.to_thread(_list, target)
        except OSError as exc:
            raise ToolError(f"cannot list {rel}: {exc.strerror or exc}") from None
        if not entries:
            return ToolOutcome(output=f"[{rel} is empty]")
        shown = entries[:LIST_LIMIT]
        text = "\n".join(shown)
        if len(entries) > LIST_LIMIT:
            text += f"\n[{LIST_LIMIT} of {len(entries)} entries shown; use glob_search to narrow down]"
        return ToolOutcome(output=text)
