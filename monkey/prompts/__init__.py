"""Prompts live here as text files, apart from the code that uses them."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

__all__ = ["render_system_prompt", "load_prompt"]


@cache
def load_prompt(name: str) -> str:
    """The text of ``<name>.md`` in this package."""
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


_VAR = re.compile(r"\{(\w+)\}")


def render_system_prompt(template: str | None, **variables: str) -> str:
    """The system prompt with ``{model}``, ``{workspace}`` ... filled in; unknown names stay."""
    text = template if template is not None else load_prompt("system")
    return _VAR.sub(lambda m: variables.get(m.group(1), m.group()), text).strip()
