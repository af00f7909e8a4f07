"""``@path`` mentions: the file goes to the model with the message, inside the workspace only."""

from __future__ import annotations

import os
from pathlib import Path

from monkey.session.mentions import expand_mentions, mention_completions


def test_a_mentioned_file_is_attached_after_the_message(workspace: Path) -> None:
    out = expand_mentions("what is in @README.md?", workspace)
    assert out.attached == ["README.md"]
    assert out.prompt.startswith("what is in @README.md?\n\n")
    assert '<file path="README.md">\n# proj\n</file>' in out.prompt
    assert out.notes == ["attached README.md (1 line)"]


def test_protected_outside_and_missing_paths(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside\n")
    os.symlink(tmp_path / "secret.txt", workspace / "link.txt")
    out = expand_mentions("see @.git/config and @link.txt and @../secret.txt and @nothing.py", workspace)
    assert out.prompt == "see @.git/config and @link.txt and @../secret.txt and @nothing.py"  # as typed
    assert out.attached == []
    assert "protected" in out.notes[0] and "outside the workspace" in out.notes[1]
    assert "outside the workspace" in out.notes[2]
    assert out.notes[3] == "@nothing.py: no such file in the workspace; left as typed"
    assert "outside" not in out.prompt.split("@nothing.py", 1)[1]


def test_size_cap_binary_and_prose(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 5000)
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "src").mkdir()
    out = expand_mentions("look at @big.txt, @blob.bin and @src. mail me at a@b.c", workspace, max_file=1000)
    assert out.attached == ["big.txt"]
    assert "x" * 1000 + "\n</file>" in out.prompt and "x" * 1001 not in out.prompt
    assert out.notes[0] == "attached big.txt (1 line) (the first 1,000 of 5,000 bytes)"
    assert out.notes[1] == "@blob.bin not attached: it is a binary file"
    assert "directory" in out.notes[2]
    assert len(out.notes) == 3  # a@b.c is not a mention


def test_completion_follows_gitignore_and_hides_protected(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("secret.txt\nbuild/\n")
    (workspace / "secret.txt").write_text("s")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("")
    (workspace / "build").mkdir()
    assert mention_completions(workspace, "") == ["README.md", "src/"]
    assert mention_completions(workspace, "s") == ["src/"]
    assert mention_completions(workspace, "src/m") == ["src/main.py"]
    assert mention_completions(workspace, ".") == [".gitignore"]
    assert mention_completions(workspace, ".git/") == []
    assert mention_completions(workspace, "build/") == []
    assert mention_completions(workspace, "../") == []
