"""The search tools: find files by glob, and lines by regular expression.

Both walk the workspace the way git sees it (``.gitignore`` honoured, ``.git`` and
``.monkey`` skipped) and give back workspace-relative paths in a deterministic order, with
a cap and a note when there is more. Finding nothing is a normal result that says so.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import msgspec

from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from monkey.tools.fileio import looks_binary
from monkey.tools.gitignore import IgnoreRules, walk
from monkey.tools.workspace import relative, resolve_path

__all__ = ["GlobSearch", "GrepSearch", "glob_regex"]

GLOB_LIMIT = 500
"""Paths ``glob_search`` gives back at most."""
GREP_LIMIT = 500
"""Matching lines ``grep_search`` gives back at most."""
GREP_MAX_FILE = 5 * 1024 * 1024
"""Files larger than this are not searched."""
LINE_CUT = 300
"""Characters of a matching line that are shown."""
_BRACES = 64
"""Alternatives a pattern's ``{a,b}`` groups may expand to."""


def _expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` groups (nested too) into alternatives; unmatched braces stay."""
    depth = 0
    start = -1
    commas: list[int] = []
    escaped = False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif ch == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0 and commas:
                bounds = [start, *commas, i]
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for a, b in zip(bounds, bounds[1:], strict=False):
                    for rest in _expand_braces(head + pattern[a + 1 : b] + tail):
                        out.append(rest)
                        if len(out) > _BRACES:
                            raise ToolError(f"pattern {pattern!r} expands to too many alternatives")
                return out
        elif ch == "," and depth == 1:
            commas.append(i)
    return [pattern]


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        at_segment = i == 0 or pattern[i - 1] == "/"
        if at_segment and pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif at_segment and pattern.startswith("**", i) and i + 2 == n:
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape("["))
                i += 1
                continue
            body = pattern[i + 1 : j]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            i = j + 1
        elif pattern[i] == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a path glob into a regular expression matched against a whole posix path.

    ``*`` and ``?`` stay inside one path segment, ``**/`` spans any number of directories
    (none included), a trailing ``**`` matches everything below, ``[abc]`` and ``[!abc]``
    are character classes and ``{a,b}`` gives alternatives. Dotfiles are matched too.

    Args:
        pattern: The glob, relative, in posix form.

    Returns:
        A pattern to use with ``fullmatch``.

    Raises:
        ToolError: The pattern cannot be compiled.
    """
    alternatives = [_translate(p) for p in _expand_braces(pattern)]
    try:
        return re.compile("(?:" + "|".join(alternatives) + ")", re.DOTALL)
    except re.error as exc:
        raise ToolError(f"invalid glob pattern {pattern!r}: {exc}") from None


def _clean_glob(pattern: str, name: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        raise ToolError(f"{name} is empty")
    if pattern.startswith("/"):
        raise ToolError(f"{name} must be relative to the searched directory, not absolute")
    if ".." in pattern.split("/"):
        raise ToolError(f"{name} cannot contain '..'; pass a different path instead")
    return pattern


@dataclass
class _Search:
    """Where a search runs: the workspace, the start (dir or file) and the ignore rules."""

    root: Path
    target: Path
    rel: str
    denied: Callable[[str], bool] | None = None
    """Files a deny rule forbids reading: never searched, never named."""
    skipped: int = 0
    """How many files :meth:`files` left out because of ``denied``."""
    rules: IgnoreRules = field(init=False)

    def __post_init__(self) -> None:
        self.rules = IgnoreRules(self.root)

    @property
    def start(self) -> str:
        """The start as a walk wants it ("" for the workspace root)."""
        return "" if self.rel == "." else self.rel

    def below(self, path: str) -> str:
        """A workspace-relative path made relative to the start."""
        return path[len(self.start) + 1 :] if self.start else path

    def files(self) -> list[str]:
        """Every not-ignored file below the start, sorted (just the start if it is a file)."""
        found = [self.rel] if self.target.is_file() else sorted(walk(self.root, self.start, rules=self.rules))
        if self.denied is None:
            return found
        kept = [rel for rel in found if not self.denied(rel)]
        self.skipped = len(found) - len(kept)
        return kept

    def ignored_note(self) -> str:
        """A note for empty results when the start itself is ignored."""
        if self.start and self.rules.ignored_anywhere(self.start, is_dir=self.target.is_dir()):
            return f" ({self.rel} is ignored by .gitignore, so its files are not searched)"
        return ""

    def denied_note(self) -> str:
        """A note saying files were left out by deny rules (empty when none were)."""
        if not self.skipped:
            return ""
        return f"\n[{self.skipped} file(s) not searched: a deny rule forbids reading them]"


def _where(ctx: ToolContext, path: str, *, files_ok: bool) -> _Search:
    target = resolve_path(ctx.workspace, path, for_write=False)
    rel = relative(ctx.workspace, target)
    if not target.exists():
        raise ToolError(f"{rel} does not exist")
    if not files_ok and not target.is_dir():
        raise ToolError(f"{rel} is not a directory")
    return _Search(ctx.workspace.resolve(), target, rel, ctx.read_denied)


SearchPath = Annotated[
    str, msgspec.Meta(description="Directory to search, relative to the workspace root; the root by default.")
]


# ---------------------------------------------------------------------------- glob_search


class GlobArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of glob_search."""

    pattern: Annotated[str, msgspec.Meta(description="Glob relative to path, e.g. **/*.py or src/*.{ts,tsx}.")]
    path: SearchPath = "."


class GlobSearch(Tool[GlobArgs]):
    """Find files whose paths match a glob."""

    name = "glob_search"
    Args = GlobArgs

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolOutcome:
        """Give back the sorted workspace-relative paths of matching files."""
        pattern = _clean_glob(args.pattern, "pattern")
        regex = glob_regex(pattern)
        where = _where(ctx, args.path, files_ok=False)

        def search() -> list[str]:
            return [p for p in where.files() if regex.fullmatch(where.below(p))]

        found = await asyncio.to_thread(search)
        if not found:
            hint = ""
            if "/" not in pattern:
                hint = (
                    f" (a pattern without / matches only files directly in {where.rel}; "
                    f"use **/{pattern} to search subdirectories too)"
                )
            return ToolOutcome(
                output=f"no files match {pattern} in {where.rel}{hint}{where.ignored_note()}{where.denied_note()}"
            )
        text = "\n".join(found[:GLOB_LIMIT])
        if len(found) > GLOB_LIMIT:
            text += f"\n[{GLOB_LIMIT} of {len(found)} matching files shown; narrow the pattern or path]"
        return ToolOutcome(output=text + where.denied_note())


# ---------------------------------------------------------------------------- grep_search


class GrepArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of grep_search."""

    pattern: Annotated[str, msgspec.Meta(description="Python regular expression searched in each line.")]
    path: Annotated[
        str,
        msgspec.Meta(description="File or directory to search, relative to the workspace root; the root by default."),
    ] = "."
    glob: Annotated[
        str,
        msgspec.Meta(
            description="Only search files matching this glob: a name pattern like *.py, "
            "or a path pattern relative to path like src/**/*.ts. Empty: all files."
        ),
    ] = ""


_NO_PREFILTER = re.compile(r"\\[AZz]|\$|\(\?<|\(\?!")
"""Pattern parts for which searching the whole text may miss a per-line match."""


@dataclass
class _GrepResult:
    lines: list[str] = field(default_factory=list)
    more: bool = False
    too_big: int = 0


def _grep(where: _Search, regex: re.Pattern[str], glob: str) -> _GrepResult:
    """Search the files of ``where`` line by line (blocking; run it in a thread)."""
    whole = None
    if not _NO_PREFILTER.search(regex.pattern):
        whole = re.compile(regex.pattern, regex.flags | re.MULTILINE)
    name_only = glob and "/" not in glob
    glob_re = glob_regex(glob) if glob else None
    result = _GrepResult()
    for rel in where.files():
        if glob_re is not None and where.target.is_dir():
            subject = rel.rpartition("/")[2] if name_only else where.below(rel)
            if not glob_re.fullmatch(subject):
                continue
        path = where.root / rel
        try:
            if path.stat().st_size > GREP_MAX_FILE:
                result.too_big += 1
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if looks_binary(data):
            continue
        text = data.decode("utf-8", errors="replace")
        if whole is not None and whole.search(text) is None:
            continue
        for lineno, line in enumerate(text.split("\n"), 1):
            line = line.removesuffix("\r")
            if regex.search(line) is None:
                continue
            if len(result.lines) >= GREP_LIMIT:
                result.more = True
                return result
            shown = line if len(line) <= LINE_CUT else line[:LINE_CUT] + "…"
            result.lines.append(f"{rel}:{lineno}: {shown}")
    return result


class GrepSearch(Tool[GrepArgs]):
    """Find lines matching a regular expression."""

    name = "grep_search"
    Args = GrepArgs

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutcome:
        """Give back matching lines as ``path:line: text``."""
        if not args.pattern:
            raise ToolError("pattern is empty")
        try:
            regex = re.compile(args.pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {args.pattern!r}: {exc}") from None
        glob = _clean_glob(args.glob, "glob") if args.glob.strip() else ""
        where = _where(ctx, args.path, files_ok=True)
        found = await asyncio.to_thread(_grep, where, regex, glob)
        notes = []
        if found.more:
            notes.append(f"[stopped after {GREP_LIMIT} matching lines; narrow the pattern, path or glob]")
        if found.too_big:
            notes.append(f"[{found.too_big} file(s) over 5 MB not searched]")
        if not found.lines:
            in_glob = f" (files matching {glob})" if glob else ""
            text = f"no matches for {args.pattern!r} in {where.rel}{in_glob}{where.ignored_note()}"
        else:
            text = "\n".join(found.lines)
        return ToolOutcome(output="\n".join([text, *notes]) + where.denied_note())
