"""YAML front matter, read one way for every Markdown file monkey takes settings from.

Skills (``SKILL.md``) and sub-agent definitions (``.monkey/agents/*.md``,
``.claude/agents/*.md``) start with a block between two ``---`` lines, parsed with
``yaml.safe_load``; the rest of the file is the body.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["FrontMatterError", "split_front_matter"]


class FrontMatterError(ValueError):
    """The front matter is missing, unclosed, not YAML or not a mapping; the message says which."""


def split_front_matter(text: str, where: Path | str) -> tuple[dict[str, Any], str]:
    """The front matter of ``text`` as a dict, and the body after it.

    ``where`` names the file in the error messages.

    Raises:
        FrontMatterError: what is wrong with the front matter, with the line where YAML says so.
    """
    import yaml

    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError(f"{where}: no front matter (it must start with a line ---)")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise FrontMatterError(f"{where}: the front matter has no closing line ---")
    try:
        meta = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 2})" if mark is not None else ""
        raise FrontMatterError(f"{where}: the front matter is not valid YAML{line}") from None
    if not isinstance(meta, dict):
        raise FrontMatterError(f"{where}: the front matter must be a mapping of keys")
    return meta, "".join(lines[end + 1 :])
