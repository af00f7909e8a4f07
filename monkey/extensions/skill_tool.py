"""The ``skill`` tool: the model loads a skill's instructions (or one of its files) by name.

Reading a skill changes nothing, so the tool needs no approval; the tools a skill's
``allowed-tools`` names are allowed for the rest of the turn through :attr:`SkillTool.on_load`
(the loop grants them in the permission engine, where deny rules, the protected set and
plan mode still come first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import msgspec

from monkey.extensions.skills import Skill, SkillError, Skills, granted
from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome, load_description

__all__ = ["SkillTool", "SkillArgs", "skill_text"]


class SkillArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of skill."""

    name: Annotated[str, msgspec.Meta(description="The skill's name, as listed under Skills.")]
    file: Annotated[
        str,
        msgspec.Meta(description="A file of the skill to read instead of its instructions (a path inside the skill)."),
    ] = ""


def skill_text(skill: Skill, arguments: str = "") -> str:
    """A skill's instructions as the model gets them, with its files and the person's arguments."""
    text = f'<skill name="{skill.name}">\n{skill.body()}\n</skill>'
    files = skill.files()
    if files:
        text += (
            f"\n\nFiles of this skill (read one with the skill tool, name={skill.name!r} and file set): "
            + ", ".join(files)
        )
    if arguments:
        text += f"\n\nArguments: {arguments}"
    return text


class SkillTool(Tool[SkillArgs]):
    """Loads a skill's instructions by name."""

    name = "skill"
    Args = SkillArgs

    def __init__(self, skills: Skills) -> None:
        self.skills = skills
        self.on_load: Callable[[Skill], object] = lambda skill: None
        """Called when a skill's instructions are loaded (the loop grants its allowed tools)."""

    @property
    def description(self) -> str:
        return load_description(__package__ or "monkey.agent", self.name)

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolOutcome:
        skill = self.skills.get(args.name)
        if skill is None:
            known = ", ".join(sorted(self.skills.by_name)) or "none"
            raise ToolError(f"no skill named {args.name!r}; the skills are: {known}")
        try:
            if args.file:
                return ToolOutcome(output=skill.file(args.file))
            text = skill_text(skill)
        except SkillError as exc:
            raise ToolError(str(exc)) from None
        self.on_load(skill)
        _, why = granted(skill)
        return ToolOutcome(output=f"{text}\n\n(Skill {skill.name}: {why}.)" if why else text)
