"""The walker sees the workspace the way git does."""

from __future__ import annotations

from pathlib import Path

from monkey.tools.gitignore import IgnoreRules, walk
from tests.support.tools import make


def test_root_nested_negation_and_directories(ws: Path) -> None:
    make(
        ws,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\n",
            "a.log": "",
            "keep.log": "",
            "top-only.txt": "",
            "src/top-only.txt": "",
            "src/app.py": "",
            "src/.gitignore": "generated/\n*.tmp\n!important.tmp\n",
            "src/x.tmp": "",
            "src/important.tmp": "",
            "src/generated/g.py": "",
            "generated/kept.py": "",
            "build/out.js": "",
            "src/deep/build/o.js": "",
            "docs/sub/.gitignore": "!*.log\n",
            "docs/sub/notes.log": "",
            ".git/config": "",
            ".monkey/state": "",
        },
    )
    assert sorted(walk(ws)) == [
        ".gitignore",
        "docs/sub/.gitignore",
        "docs/sub/notes.log",  # a deeper .gitignore re-includes what the root ignores
        "generated/kept.py",  # src/.gitignore is anchored at src/
        "keep.log",
        "src/.gitignore",
        "src/app.py",
        "src/important.tmp",
        "src/top-only.txt",
    ]


def test_info_exclude_is_honoured_and_overridden_by_gitignore(ws: Path) -> None:
    make(ws, {".git/info/exclude": "*.secret\nlocal/\n", ".gitignore": "!shared.secret\n"})
    make(ws, {"a.secret": "", "shared.secret": "", "local/x": "", "ok.txt": ""})
    assert sorted(walk(ws)) == [".gitignore", "ok.txt", "shared.secret"]


def test_directories_are_yielded_on_request_and_order_is_stable(ws: Path) -> None:
    make(ws, {"b/z.txt": "", "a/y.txt": "", "c.txt": "", ".gitignore": "ignored/\n", "ignored/q": ""})
    first = list(walk(ws, dirs=True))
    assert first == list(walk(ws, dirs=True))
    assert set(first) == {".gitignore", "a", "b", "c.txt", "a/y.txt", "b/z.txt"}


def test_walk_from_a_subdirectory_applies_parent_rules(ws: Path) -> None:
    make(ws, {".gitignore": "*.o\n", "src/a.c": "", "src/a.o": "", "src/lib/b.o": "", "src/lib/b.c": ""})
    assert sorted(walk(ws, "src")) == ["src/a.c", "src/lib/b.c"]


def test_symlinks_are_not_followed_out(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (ws / "dirlink").symlink_to(outside)
    (ws / "filelink").symlink_to(outside / "secret.txt")
    (ws / "real.txt").write_text("r")
    (ws / "inner").symlink_to("real.txt")
    assert sorted(walk(ws, dirs=True)) == ["inner", "real.txt"]


def test_ignored_anywhere(ws: Path) -> None:
    make(ws, {".gitignore": "node_modules/\n"})
    rules = IgnoreRules(ws)
    assert rules.ignored_anywhere("node_modules/x/y.js", is_dir=False)
    assert not rules.ignored_anywhere("src/y.js", is_dir=False)
    assert rules.ignored(".git/config", is_dir=False)


def test_bad_gitignore_lines_do_not_hide_good_ones(ws: Path) -> None:
    make(ws, {".gitignore": "\ufeff*.log\r\n!\r\n[\r\n", "a.log": "", "b.txt": ""})
    assert "a.log" not in list(walk(ws))
    assert "b.txt" in list(walk(ws))


def test_a_linked_worktree_honours_its_repository_s_info_exclude(ws: Path, tmp_path: Path) -> None:
    import os
    import subprocess

    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    subprocess.run(
        [
            "git",
            "-C",
            str(ws),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
        check=True,
        env=env,
    )
    wt = tmp_path / "wt"
    subprocess.run(["git", "-C", str(ws), "worktree", "add", "-q", str(wt)], check=True, env=env)
    make(ws, {".git/info/exclude": "*.secret\n"})
    make(wt, {"a.secret": "", "ok.txt": ""})
    assert sorted(walk(wt)) == ["ok.txt"], "git's exclude file of the repository applies in its worktrees"
