"""glob_search and grep_search on real trees, .gitignore included."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.tools.base import ToolError
from monkey.tools.search import glob_regex

from tests.support.tools import Call
from tests.support.tools import make


@pytest.fixture
def tree(ws: Path) -> Path:
    make(
        ws,
        {
            ".gitignore": "*.log\n!keep.log\nnode_modules/\ndist\n",
            "app.py": "import os\nTODO = 1\n",
            "keep.log": "TODO keep\n",
            "debug.log": "TODO ignored\n",
            "src/main.ts": "// TODO main\n",
            "src/util/helpers.ts": "export const x = 1 // todo lower\n",
            "src/util/helpers.tsx": "TODO tsx\n",
            "src/.gitignore": "secret.py\n",
            "src/secret.py": "TODO secret\n",
            "lib/secret.py": "TODO visible\n",
            "node_modules/pkg/index.js": "TODO dep\n",
            "dist/out.js": "TODO built\n",
            ".git/config": "TODO git\n",
        },
    )
    return ws


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("**/*.py", ["a.py", "x/y/a.py", ".hidden/a.py"], ["a.pyc", "a/py"]),
        ("*.py", ["a.py"], ["x/a.py"]),
        ("src/**", ["src/a", "src/x/y"], ["srcx/a"]),
        ("src/*.{ts,tsx}", ["src/a.ts", "src/a.tsx"], ["src/x/a.ts", "src/a.js"]),
        ("a?[0-9].txt", ["ab1.txt"], ["a/1.txt", "ab.txt"]),
        ("[!a]*", ["b"], ["a", "x/b"]),
        ("**/test_*.py", ["test_a.py", "t/test_b.py"], ["t/a_test.py"]),
    ],
)
def test_glob_regex(pattern: str, yes: list[str], no: list[str]) -> None:
    regex = glob_regex(pattern)
    assert all(regex.fullmatch(p) for p in yes), pattern
    assert not any(regex.fullmatch(p) for p in no), pattern


async def test_glob_honours_gitignore(tree: Path, call: Call) -> None:
    out = (await call("glob_search", pattern="**/*")).output.splitlines()
    assert out == [
        ".gitignore",
        "app.py",
        "keep.log",
        "lib/secret.py",
        "src/.gitignore",
        "src/main.ts",
        "src/util/helpers.ts",
        "src/util/helpers.tsx",
    ]


async def test_glob_relative_to_path_and_braces(tree: Path, call: Call) -> None:
    out = (await call("glob_search", pattern="**/*.{ts,tsx}", path="src/util")).output
    assert out == "src/util/helpers.ts\nsrc/util/helpers.tsx"
    assert (await call("glob_search", pattern="*.py")).output == "app.py"


async def test_glob_no_match_is_ok_and_hints(tree: Path, call: Call) -> None:
    out = (await call("glob_search", pattern="*.ts")).output
    assert out.startswith("no files match *.ts in .") and "**/*.ts" in out
    out = (await call("glob_search", pattern="**/*.js", path="node_modules")).output
    assert "node_modules is ignored by .gitignore" in out


async def test_glob_cap(ws: Path, call: Call) -> None:
    for i in range(510):
        (ws / f"f{i:03d}.txt").touch()
    out = (await call("glob_search", pattern="*.txt")).output.splitlines()
    assert len(out) == 501 and out[0] == "f000.txt"
    assert out[-1] == "[500 of 510 matching files shown; narrow the pattern or path]"


async def test_glob_errors(tree: Path, call: Call) -> None:
    with pytest.raises(ToolError, match="absolute"):
        await call("glob_search", pattern="/etc/*")
    with pytest.raises(ToolError, match=r"'\.\.'"):
        await call("glob_search", pattern="../**")
    with pytest.raises(ToolError, match="outside"):
        await call("glob_search", pattern="*", path="..")
    with pytest.raises(ToolError, match="not a directory"):
        await call("glob_search", pattern="*", path="app.py")


async def test_grep_honours_gitignore(tree: Path, call: Call) -> None:
    out = (await call("grep_search", pattern="TODO")).output
    assert out.splitlines() == [
        "app.py:2: TODO = 1",
        "keep.log:1: TODO keep",
        "lib/secret.py:1: TODO visible",
        "src/main.ts:1: // TODO main",
        "src/util/helpers.tsx:1: TODO tsx",
    ]


async def test_grep_glob_filters(tree: Path, call: Call) -> None:
    assert (await call("grep_search", pattern="(?i)todo", glob="*.ts")).output.splitlines() == [
        "src/main.ts:1: // TODO main",
        "src/util/helpers.ts:1: export const x = 1 // todo lower",
    ]
    out = (await call("grep_search", pattern="TODO", glob="src/**/*.tsx")).output
    assert out == "src/util/helpers.tsx:1: TODO tsx"
    out = (await call("grep_search", pattern="TODO", path="src", glob="util/*.tsx")).output
    assert out == "src/util/helpers.tsx:1: TODO tsx"


async def test_grep_single_file_and_anchors(tree: Path, call: Call) -> None:
    assert (await call("grep_search", pattern="^TODO", path="app.py")).output == "app.py:2: TODO = 1"
    (tree / "crlf.txt").write_bytes(b"a end\r\nb end\r\n")
    assert (await call("grep_search", pattern="b end$", path="crlf.txt")).output == "crlf.txt:2: b end"


async def test_grep_no_matches_is_ok(tree: Path, call: Call) -> None:
    out = (await call("grep_search", pattern="nothing-like-this", glob="*.py")).output
    assert out == "no matches for 'nothing-like-this' in . (files matching *.py)"


async def test_grep_invalid_regex(tree: Path, call: Call) -> None:
    with pytest.raises(ToolError, match="invalid regular expression '\\(unclosed'"):
        await call("grep_search", pattern="(unclosed")


async def test_grep_skips_binary_and_huge_files_and_cuts_lines(ws: Path, call: Call) -> None:
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    with open(ws / "huge.txt", "wb") as fh:
        fh.write(b"needle\n")
        fh.truncate(6 * 1024 * 1024)
    (ws / "long.txt").write_text("needle" + "x" * 1000 + "\n")
    out = (await call("grep_search", pattern="needle")).output.splitlines()
    assert out[0] == "long.txt:1: needle" + "x" * 294 + "…"
    assert out[1] == "[1 file(s) over 5 MB not searched]"
    assert len(out) == 2


async def test_grep_cap(ws: Path, call: Call) -> None:
    (ws / "many.txt").write_text("hit\n" * 600)
    out = (await call("grep_search", pattern="hit")).output.splitlines()
    assert len(out) == 501 and out[499] == "many.txt:500: hit"
    assert out[-1] == "[stopped after 500 matching lines; narrow the pattern, path or glob]"


async def test_search_tools_are_safe() -> None:
    from monkey.tools.search import GlobSearch, GrepSearch

    for tool in (GlobSearch(), GrepSearch()):
        assert tool.read_only and not tool.dangerous
