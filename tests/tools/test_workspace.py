"""The workspace guard refuses every way out of the workspace and into .git/.monkey."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monkey.tools.base import ToolError
from monkey.tools.workspace import is_protected_name, relative, resolve_path


def test_relative_paths_resolve_inside(ws: Path) -> None:
    (ws / "src").mkdir()
    assert resolve_path(ws, "src/app.py", for_write=True) == ws.resolve() / "src" / "app.py"
    assert resolve_path(ws, "./src/../README.md", for_write=False) == ws.resolve() / "README.md"
    assert resolve_path(ws, ".", for_write=False) == ws.resolve()


def test_absolute_path_inside_is_accepted(ws: Path) -> None:
    assert resolve_path(ws, str(ws / "a.txt"), for_write=True) == ws.resolve() / "a.txt"


@pytest.mark.parametrize("path", ["../x", "../../etc/passwd", "/etc/passwd", "src/../../x"])
def test_escapes_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_path(ws, path, for_write=False)


def test_sibling_with_common_prefix_is_outside(ws: Path) -> None:
    evil = ws.parent / "proj-evil"
    evil.mkdir()
    (evil / "secret.txt").write_text("s")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_path(ws, str(evil / "secret.txt"), for_write=False)
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_path(ws, "../proj-evil/secret.txt", for_write=True)


def test_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (ws / "link").symlink_to(outside)
    (ws / "file-link").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="resolves to"):
        resolve_path(ws, "link/secret.txt", for_write=False)
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_path(ws, "file-link", for_write=True)


def test_symlink_inside_the_workspace_is_followed(ws: Path) -> None:
    (ws / "real.txt").write_text("x")
    (ws / "alias.txt").symlink_to("real.txt")
    assert resolve_path(ws, "alias.txt", for_write=True) == ws.resolve() / "real.txt"
    assert resolve_path(ws, "alias.txt", for_write=True, follow_final=False) == ws.resolve() / "alias.txt"


def test_workspace_given_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    via = tmp_path / "via"
    via.symlink_to(ws)
    assert resolve_path(via, "a.txt", for_write=True) == ws.resolve() / "a.txt"
    assert resolve_path(via, str(via / "a.txt"), for_write=True) == ws.resolve() / "a.txt"


@pytest.mark.parametrize(
    "path",
    [".git/config", ".monkey/x", ".GIT/config", ".Monkey/config.toml", "sub/.git/HEAD", ".git", ".git/../.git/x"],
)
def test_protected_directories_are_refused(ws: Path, path: str) -> None:
    (ws / ".git").mkdir()
    with pytest.raises(ToolError, match="protected"):
        resolve_path(ws, path, for_write=False)
    with pytest.raises(ToolError, match="protected"):
        resolve_path(ws, path, for_write=True)


def test_absolute_path_into_git_is_refused(ws: Path) -> None:
    (ws / ".git").mkdir()
    with pytest.raises(ToolError, match="protected"):
        resolve_path(ws, str(ws / ".git" / "config"), for_write=False)


def test_symlink_to_git_is_refused(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "cfg").symlink_to(".git/config")
    (ws / "g").symlink_to(".git")
    with pytest.raises(ToolError, match="protected"):
        resolve_path(ws, "cfg", for_write=True)
    with pytest.raises(ToolError, match="protected"):
        resolve_path(ws, "g/hooks/pre-commit", for_write=True)


def test_workspace_inside_a_protected_looking_folder_still_works(tmp_path: Path) -> None:
    root = tmp_path / ".monkey" / "proj"
    root.mkdir(parents=True)
    assert resolve_path(root, "a.txt", for_write=True) == root.resolve() / "a.txt"
    assert resolve_path(root, str(root / "a.txt"), for_write=True) == root.resolve() / "a.txt"


@pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
def test_empty_or_nul_path_is_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="empty|NUL"):
        resolve_path(ws, path, for_write=False)


def test_root_cannot_be_written(ws: Path) -> None:
    with pytest.raises(ToolError, match="workspace root"):
        resolve_path(ws, ".", for_write=True)


def test_relative_for_messages(ws: Path) -> None:
    assert relative(ws, ws.resolve() / "src" / "a.py") == "src/a.py"
    assert relative(ws, ws.resolve()) == "."
    assert relative(ws, Path("/etc/passwd")) == "/etc/passwd"


def test_protected_names() -> None:
    assert is_protected_name(".git") and is_protected_name(".GIT") and is_protected_name(".monkey")
    assert is_protected_name(".git.")
    assert not is_protected_name(".github") and not is_protected_name("git") and not is_protected_name("..")


def test_symlink_loop_is_handled(ws: Path) -> None:
    os.symlink("b", ws / "a")
    os.symlink("a", ws / "b")
    # Either refused clearly or resolved inside; never an unexpected exception.
    try:
        path = resolve_path(ws, "a", for_write=False)
    except ToolError:
        return
    assert ws.resolve() in path.parents or path == ws.resolve()
