"""The stages of the Think/Plan/Do/Reflect workflow: each one's prompt, tool set and mode.

Think and Reflect get the tools that only read (and ``shell_execute``, which plan mode lets
run only for lines it can prove read-only); Plan gets those and ``exit_plan_mode``; Do gets
every tool. Think, Plan and Reflect run in plan mode (the engine refuses every change), Do in
the configured mode (or the one an approved plan chose).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from monkey.permissions.rules import EXIT_PLAN_MODE, SHELL_TOOL
from monkey.tools.registry import ToolRegistry

__all__ = ["Stage", "STAGES", "stage_tools", "stage_prompt", "parse_verdict"]

ToolSet = Literal["read", "plan", "all"]


@dataclass(frozen=True)
class Stage:
    """One stage: its name, the tools it is offered and whether it runs read-only (plan mode)."""

    name: str
    tools: ToolSet
    read_only: bool


STAGES = {
    "think": Stage("think", "read", True),
    "plan": Stage("plan", "plan", True),
    "do": Stage("do", "all", False),
    "reflect": Stage("reflect", "read", True),
}


def stage_tools(full: ToolRegistry, tools: ToolSet) -> ToolRegistry:
    """The stage's tools, taken from the agent's whole set (the same tool objects, in order)."""
    if tools == "all":
        return ToolRegistry([t for t in full if t.name != EXIT_PLAN_MODE])
    keep = [
        t
        for t in full
        if (t.read_only and not t.dangerous) or t.name == SHELL_TOOL or (tools == "plan" and t.name == EXIT_PLAN_MODE)
    ]
    return ToolRegistry(keep)


@cache
def _template(name: str) -> str:
    return resources.files(f"{__package__}.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")


_VAR = re.compile(r"\{(\w+)\}")


def stage_prompt(name: str, **values: object) -> str:
    """The prompt of stage ``name`` (``prompts/<name>.md``) with ``{task}``, ``{handoff}`` ... filled in."""
    text = _VAR.sub(lambda m: str(values.get(m.group(1), "")), _template(name))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_VERDICT = re.compile(r"^\W*verdict\W*:?\s*\**\s*(not[\s_-]*done|done)\b", re.I | re.M)
_REASON = re.compile(r"^\W*reason\W*:?\s*(.+)$", re.I | re.M)


def parse_verdict(text: str) -> tuple[str, str]:
    """Reflect's ``(verdict, reason)`` from its answer: ``done`` or ``not_done``; no verdict line is not done."""
    found = _VERDICT.findall(text)
    if not found:
        return "not_done", "Reflect gave no verdict"
    verdict = "done" if found[-1].lower() == "done" else "not_done"
    reasons = _REASON.findall(text)
    reason = reasons[-1].strip() if reasons else ""
    return verdict, reason or ("the task is done" if verdict == "done" else "Reflect said it is not done")
