"""The file tools on real files: read, write, edit, delete, list."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from monkey.tools.base import ToolContext, ToolError
from monkey.tools.files import FileDelete, FileEdit, FileWrite

from tests.support.tools import Call

# ------------------------------------------------------------------------------- file_read


async def test_read_whole_file(ws: Path, call: Call) -> None:
    (ws / "a.py").write_text("one\ntwo\n")
    assert (await call("file_read", path="a.py")).output == "one\ntwo\n"


async def test_read_window_says_how_to_read_on(ws: Path, call: Call) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5124)))
    out = (await call("file_read", path="big.txt")).output
    assert out.startswith("line 1\n")
    assert "line 2000\n" in out and "line 2001\n" not in out
    assert out.endswith("[lines 1-2000 of 5123; pass offset=2001 to read on]")
    out = (await call("file_read", path="big.txt", offset=5120, limit=10)).output
    assert out == "line 5120\nline 5121\nline 5122\nline 5123\n[lines 5120-5123 of 5123]"
    out = (await call("file_read", path="big.txt", offset=10, limit=2)).output
    assert out == "line 10\nline 11\n[lines 10-11 of 5123; pass offset=12 to read on]"


async def test_read_character_cap(ws: Path, call: Call, ctx: ToolContext) -> None:
    (ws / "wide.txt").write_text("x" * 99 + "\n" + "y" * 99 + "\n" + "z\n")
    out = (await call("file_read", replace(ctx, read_limit=150), path="wide.txt")).output
    assert out.startswith("x" * 99 + "\n") and "y" not in out
    assert "[lines 1-1 of 3 (output limit of 150 characters reached); pass offset=2 to read on]" in out


async def test_read_cuts_a_line_longer_than_the_cap(ws: Path, call: Call, ctx: ToolContext) -> None:
    (ws / "min.js").write_text("a" * 500 + "\nb\n")
    out = (await call("file_read", replace(ctx, read_limit=100), path="min.js")).output
    assert out.startswith("a" * 100 + "\n[line 1 is longer than 100 characters")
    assert "pass offset=2" in out


async def test_read_huge_file_counts_all_lines(ws: Path, call: Call) -> None:
    line = "0123456789" * 10 + "\n"
    (ws / "huge.txt").write_text(line * 40_000 + "last")  # 4 MB, read in a worker thread
    out = (await call("file_read", path="huge.txt", limit=3)).output
    assert out == line * 3 + "[lines 1-3 of 40001; pass offset=4 to read on]"


async def test_read_binary_file(ws: Path, call: Call) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x00\x00" + bytes(range(256)))
    out = (await call("file_read", path="img.png")).output
    assert out == "img.png: binary file, 264 bytes, not shown"


async def test_read_invalid_utf8_is_replaced_and_said(ws: Path, call: Call) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    out = (await call("file_read", path="latin.txt")).output
    assert out.startswith("caf\ufffd\n")
    assert "not valid UTF-8" in out


async def test_read_errors(ws: Path, call: Call) -> None:
    (ws / "config.yaml").write_text("a: 1\n")
    (ws / "dir").mkdir()
    (ws / "empty.txt").write_text("")
    with pytest.raises(ToolError, match=r"config\.yml does not exist; similar names there: config\.yaml"):
        await call("file_read", path="config.yml")
    with pytest.raises(ToolError, match="is a directory; use list_directory"):
        await call("file_read", path="dir")
    with pytest.raises(ToolError, match="past the end of config.yaml, which has 1 lines"):
        await call("file_read", path="config.yaml", offset=5)
    with pytest.raises(ToolError, match="invalid arguments"):
        await call("file_read", path="config.yaml", offset=0)
    with pytest.raises(ToolError, match="invalid arguments"):
        await call("file_read", path="config.yaml", bogus=1)
    assert (await call("file_read", path="empty.txt")).output == "[empty.txt is empty]"


async def test_read_refuses_fifo(ws: Path, call: Call) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await call("file_read", path="pipe")


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", ".git/config", ".monkey/x", ".GIT/config"])
async def test_read_refuses_paths_outside_or_protected(ws: Path, call: Call, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace|protected"):
        await call("file_read", path=path)


# ------------------------------------------------------------------------------ file_write


def no_temp_files(root: Path) -> bool:
    return not [p for p in root.rglob("*") if p.name.endswith(".monkey-tmp")]


async def test_write_creates_with_parents_and_diff(ws: Path, call: Call) -> None:
    out = await call("file_write", path="pkg/sub/hello.py", content="a\nb\nc\n")
    assert (ws / "pkg/sub/hello.py").read_text() == "a\nb\nc\n"
    assert out.output == "created pkg/sub/hello.py (3 lines, 6 bytes)"
    assert out.paths == ["pkg/sub/hello.py"]
    assert out.diff.startswith("--- a/pkg/sub/hello.py\n+++ b/pkg/sub/hello.py\n@@ -0,0 +1,3 @@\n+a\n")
    assert no_temp_files(ws)


async def test_write_overwrites_and_keeps_mode(ws: Path, call: Call) -> None:
    script = ws / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    out = await call("file_write", path="run.sh", content="echo new")
    assert out.output == "overwrote run.sh (1 line, 8 bytes)"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert "-echo old\n+echo new\n\\ No newline at end of file\n" in out.diff
    assert no_temp_files(ws)


async def test_write_same_content_changes_nothing(ws: Path, call: Call) -> None:
    (ws / "a.txt").write_text("x\n")
    out = await call("file_write", path="a.txt", content="x\n")
    assert "nothing changed" in out.output and out.diff == ""


async def test_write_new_file_gets_umask_mode(ws: Path, call: Call) -> None:
    old = os.umask(0o022)
    try:
        await call("file_write", path="n.txt", content="")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "n.txt").stat().st_mode) == 0o644


async def test_write_through_symlink_inside_keeps_the_link(ws: Path, call: Call) -> None:
    (ws / "real.txt").write_text("old\n")
    (ws / "alias.txt").symlink_to("real.txt")
    out = await call("file_write", path="alias.txt", content="new\n")
    assert (ws / "alias.txt").is_symlink() and (ws / "real.txt").read_text() == "new\n"
    assert out.paths == ["real.txt"]


async def test_write_errors(ws: Path, call: Call, tmp_path: Path) -> None:
    (ws / "d").mkdir()
    (ws / "f").write_text("")
    with pytest.raises(ToolError, match="is a directory"):
        await call("file_write", path="d", content="x")
    with pytest.raises(ToolError, match="cannot change f/x.txt"):
        await call("file_write", path="f/x.txt", content="x")
    (ws.parent / "proj-evil").mkdir()
    for bad in ["../proj-evil/x", str(tmp_path / "x"), ".git/hooks/pre-commit", ".monkey/config.toml"]:
        with pytest.raises(ToolError, match="outside|protected"):
            await call("file_write", path=bad, content="x")
    assert not (ws / ".git").exists() and not (ws.parent / "proj-evil" / "x").exists()


def test_write_preview_and_touched_paths_do_not_write(ws: Path, ctx: ToolContext) -> None:
    tool = FileWrite()
    args = tool.parse({"path": "new/file.txt", "content": "hi\n"})
    assert tool.touched_paths(args, ctx) == ["new/file.txt"]
    assert tool.preview(args, ctx) == "--- a/new/file.txt\n+++ b/new/file.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert not (ws / "new").exists()
    assert tool.dangerous and not tool.read_only
    with pytest.raises(ToolError, match="protected"):
        tool.touched_paths(tool.parse({"path": ".git/x", "content": ""}), ctx)


# ------------------------------------------------------------------------------- file_edit


async def test_edit_replaces_once_with_diff(ws: Path, call: Call) -> None:
    (ws / "app.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    out = await call("file_edit", path="app.py", old_string="return 1", new_string="return 2")
    assert (ws / "app.py").read_text() == "def f():\n    return 2\n\nprint(f())\n"
    assert out.output == "edited app.py: replaced 1 occurrence (line 2)"
    assert "-    return 1\n+    return 2\n" in out.diff and out.diff.startswith("--- a/app.py\n+++ b/app.py\n")
    assert out.paths == ["app.py"]


async def test_edit_not_found(ws: Path, call: Call) -> None:
    (ws / "a.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match="old_string was not found in a.py; read the file again"):
        await call("file_edit", path="a.py", old_string="y = 1", new_string="y = 2")


async def test_edit_not_found_but_whitespace_differs(ws: Path, call: Call) -> None:
    (ws / "a.py").write_text("class A:\n    def f(self):\n        return 1\n")
    with pytest.raises(ToolError) as err:
        await call("file_edit", path="a.py", old_string="def f(self):\n    return 1", new_string="pass")
    assert "indentation/whitespace" in str(err.value) and "line 2" in str(err.value)
    assert (ws / "a.py").read_text() == "class A:\n    def f(self):\n        return 1\n"


async def test_edit_several_matches(ws: Path, call: Call) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    with pytest.raises(ToolError, match=r"occurs 3 times in a.py \(lines 1, 3, 5\).*replace_all=true"):
        await call("file_edit", path="a.py", old_string="x = 1", new_string="x = 9")
    out = await call("file_edit", path="a.py", old_string="x = 1", new_string="x = 9", replace_all=True)
    assert (ws / "a.py").read_text() == "x = 9\ny = 2\nx = 9\n\nx = 9\n"
    assert out.output == "edited a.py: replaced 3 occurrences (lines 1, 3, 5)"


async def test_edit_argument_errors(ws: Path, call: Call) -> None:
    (ws / "a.py").write_text("x\n")
    (ws / "b.bin").write_bytes(b"\x00\x01x")
    with pytest.raises(ToolError, match="old_string is empty"):
        await call("file_edit", path="a.py", old_string="", new_string="y")
    with pytest.raises(ToolError, match="are the same"):
        await call("file_edit", path="a.py", old_string="x", new_string="x")
    with pytest.raises(ToolError, match="does not exist"):
        await call("file_edit", path="nope.py", old_string="x", new_string="y")
    with pytest.raises(ToolError, match="binary file"):
        await call("file_edit", path="b.bin", old_string="x", new_string="y")


async def test_edit_keeps_crlf_and_undecodable_bytes_and_mode(ws: Path, call: Call) -> None:
    path = ws / "win.txt"
    path.write_bytes(b"caf\xe9\r\nold line\r\nend\r\n")
    path.chmod(0o600)
    await call("file_edit", path="win.txt", old_string="old line\nend", new_string="new line\nend")
    assert path.read_bytes() == b"caf\xe9\r\nnew line\r\nend\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_edit_preview_is_the_diff_and_writes_nothing(ws: Path, ctx: ToolContext) -> None:
    (ws / "a.txt").write_text("hello\n")
    tool = FileEdit()
    args = tool.parse({"path": "a.txt", "old_string": "hello", "new_string": "bye"})
    assert tool.preview(args, ctx) == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hello\n+bye\n"
    assert tool.touched_paths(args, ctx) == ["a.txt"]
    assert (ws / "a.txt").read_text() == "hello\n"


# ----------------------------------------------------------------------------- file_delete


async def test_delete_file_with_diff(ws: Path, call: Call) -> None:
    (ws / "old.py").write_text("a\nb\n")
    out = await call("file_delete", path="old.py")
    assert not (ws / "old.py").exists()
    assert out.output == "deleted old.py (2 lines, 4 bytes)"
    assert out.diff == "--- a/old.py\n+++ b/old.py\n@@ -1,2 +0,0 @@\n-a\n-b\n"


async def test_delete_symlink_removes_the_link_only(ws: Path, call: Call, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (ws / "link").symlink_to(outside)
    out = await call("file_delete", path="link")
    assert not (ws / "link").exists() and outside.read_text() == "keep me"
    assert out.output.startswith("deleted symlink link")


async def test_delete_errors(ws: Path, call: Call) -> None:
    (ws / "d").mkdir()
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref")
    with pytest.raises(ToolError, match="is a directory"):
        await call("file_delete", path="d")
    with pytest.raises(ToolError, match="does not exist"):
        await call("file_delete", path="nope")
    with pytest.raises(ToolError, match="protected"):
        await call("file_delete", path=".git/HEAD")
    with pytest.raises(ToolError, match="outside"):
        await call("file_delete", path="../x")
    with pytest.raises(ToolError, match="workspace root"):
        await call("file_delete", path="../proj")
    assert (ws / ".git" / "HEAD").exists()


def test_delete_preview_and_touched(ws: Path, ctx: ToolContext) -> None:
    (ws / "real.txt").write_text("r\n")
    (ws / "alias").symlink_to("real.txt")
    (ws / "blob.bin").write_bytes(b"\x00" * 10)
    tool = FileDelete()
    assert tool.touched_paths(tool.parse({"path": "alias"}), ctx) == ["alias"]
    assert tool.preview(tool.parse({"path": "real.txt"}), ctx) == "--- a/real.txt\n+++ b/real.txt\n@@ -1 +0,0 @@\n-r\n"
    assert tool.preview(tool.parse({"path": "blob.bin"}), ctx) == "Binary files a/blob.bin and b/blob.bin differ\n"
    assert (ws / "real.txt").exists()


# -------------------------------------------------------------------------- list_directory


async def test_list_directory(ws: Path, call: Call) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "x.py").write_text("")
    (ws / "b.txt").write_text("")
    (ws / "A.md").write_text("")
    (ws / ".git").mkdir()
    (ws / ".monkey").mkdir()
    (ws / ".gitignore").write_text("")
    assert (await call("list_directory")).output == ".gitignore\nA.md\nb.txt\nsrc/"
    assert (await call("list_directory", path="src")).output == "x.py"
    (ws / "empty").mkdir()
    assert (await call("list_directory", path="empty")).output == "[empty is empty]"


async def test_list_directory_cap_and_errors(ws: Path, call: Call) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(1005):
        (many / f"f{i:04d}").touch()
    out = (await call("list_directory", path="many")).output.splitlines()
    assert len(out) == 1001 and out[-1] == "[1000 of 1005 entries shown; use glob_search to narrow down]"
    with pytest.raises(ToolError, match="is a file"):
        await call("list_directory", path="many/f0001")
    with pytest.raises(ToolError, match="outside"):
        await call("list_directory", path="..")
    with pytest.raises(ToolError, match="protected"):
        await call("list_directory", path=".git")
