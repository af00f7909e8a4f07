"""Skills: folders with a ``SKILL.md`` (the Agent Skills format Claude Code, Codex, Gemini CLI
and Vibe share), loaded lazily.

``SKILL.md`` starts with YAML front matter (``name``: lowercase letters, digits and hyphens,
at most 64 characters, the folder's name; ``description``: at most 1,024 characters; optional
``allowed-tools`` and ``user-invocable``) and goes on with Markdown instructions. Only each
skill's ``name — description`` goes into the system prompt (:meth:`Skills.prompt`, within a
budget); the body is read when the model calls the ``skill`` tool with the name, or when
the person types ``/name``. ``allowed-tools`` (Claude Code's names and patterns, or
monkey's) become allow rules for the rest of that turn only, and only while ``SKILL.md`` is
what the session found at its start (:func:`granted`): a skill written or changed during the
session widens nothing until a person starts a new session with it.

:func:`discover` looks, later overriding earlier, in: the skills shipped with monkey, the
user's (``skills/`` in the monkey home, ``~/.agents/skills``), and, in a trusted folder only,
the project's (``.monkey/skills/``, ``.agents/skills/``, ``.claude/skills/``). A skill that
cannot be read is left out with a warning that says why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Skill",
    "Skills",
    "SkillError",
    "discover",
    "granted",
    "parse_skill",
    "tool_rules",
    "PROJECT_DIRS",
    "USER_DIRS",
]

Source = Literal["built-in", "user", "project"]

PROJECT_DIRS = (".monkey/skills", ".agents/skills", ".claude/skills")
"""Where a project keeps its skills (read in a trusted folder only)."""
USER_DIRS = ("~/.agents/skills",)
"""The person's own skills besides ``skills/`` in the monkey home (``MONKEY_USER_SKILLS``, folders
separated by ``:``, replaces them; empty: none)."""
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_BYTES = 256 * 1024
"""A ``SKILL.md`` larger than this is refused."""
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TOOL = re.compile(r"([A-Za-z_][\w-]*)(?:\(([^)]*)\))?")
CLAUDE_TOOLS = {
    "Bash": "shell_execute",
    "Read": "file_read",
    "Write": "file_write",
    "Edit": "file_edit",
    "MultiEdit": "file_edit",
    "Glob": "glob_search",
    "Grep": "grep_search",
    "LS": "list_directory",
}
"""Claude Code's tool names, as skills written for it name them, and monkey's."""


class SkillError(ValueError):
    """A skill folder that cannot be used (the message says why)."""


@dataclass(frozen=True)
class Skill:
    """One skill: what the model is told of it, and where its instructions are."""

    name: str
    description: str
    folder: Path
    source: Source
    allowed_tools: tuple[str, ...] = ()
    user_invocable: bool = True
    digest: str = ""
    """The sha256 of ``SKILL.md`` as it was read when the session found the skill."""

    def changed(self) -> bool:
        """Whether ``SKILL.md`` is no longer what was read when the skill was found (or cannot be read)."""
        try:
            return _digest(_read(self.folder / "SKILL.md")) != self.digest
        except SkillError:
            return True

    def body(self) -> str:
        """The instructions (``SKILL.md`` after its front matter), read now."""
        _, body = _split(_read(self.folder / "SKILL.md"), self.folder)
        return body.strip()

    def file(self, rel: str) -> str:
        """Another file of the skill's folder (``rel`` may not leave it)."""
        target = (self.folder / rel).resolve()
        if self.folder.resolve() not in target.parents:
            raise SkillError(f"{rel!r} is not a file of skill {self.name}")
        if not target.is_file():
            raise SkillError(f"skill {self.name} has no file {rel!r}")
        return _read(target)

    def files(self) -> list[str]:
        """The skill's other files, relative to its folder (a few levels deep)."""
        root = self.folder.resolve()
        out = [
            str(p.relative_to(root))
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "SKILL.md" and len(p.relative_to(root).parts) <= 3
        ]
        return out[:50]


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise SkillError(f"{path}: larger than {MAX_BYTES // 1024} KiB")
    return data.decode("utf-8", "replace")


def _split(text: str, folder: Path) -> tuple[dict[str, Any], str]:
    """The front matter and the body of ``folder``'s ``SKILL.md``."""
    from monkey.extensions.front_matter import FrontMatterError, split_front_matter

    try:
        return split_front_matter(text, folder / "SKILL.md")
    except FrontMatterError as exc:
        raise SkillError(str(exc)) from None


def parse_skill(folder: Path, source: Source) -> Skill:
    """Read the skill in ``folder`` (raises :class:`SkillError` saying what is wrong)."""
    text = _read(folder / "SKILL.md")
    meta, _ = _split(text, folder)
    name, description = meta.get("name"), meta.get("description")
    where = folder / "SKILL.md"
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > MAX_NAME:
        raise SkillError(
            f"{where}: name must be lowercase letters, digits and hyphens, at most {MAX_NAME} characters (got {name!r})"
        )
    if name != folder.name:
        raise SkillError(f"{where}: name {name!r} is not its folder's name {folder.name!r}")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{where}: description is missing")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{where}: description is longer than {MAX_DESCRIPTION} characters")
    tools = meta.get("allowed-tools", ())
    if isinstance(tools, str):
        tools = [m.group(0) for m in _TOOL.finditer(tools)]
    if not isinstance(tools, (list, tuple)) or not all(isinstance(t, str) for t in tools):
        raise SkillError(f"{where}: allowed-tools must be a list or a line of tool names")
    invocable = meta.get("user-invocable", True)
    if not isinstance(invocable, bool):
        raise SkillError(f"{where}: user-invocable must be true or false")
    return Skill(name, " ".join(description.split()), folder, source, tuple(tools), invocable, _digest(text))


def tool_rules(skill: Skill) -> tuple[list[str], list[str]]:
    """``allowed-tools`` as monkey allow rules, and the entries that name no tool monkey has."""
    rules, unknown = [], []
    for entry in skill.allowed_tools:
        m = _TOOL.fullmatch(entry.strip())
        if not m:
            unknown.append(entry)
            continue
        tool, pattern = CLAUDE_TOOLS.get(m.group(1), m.group(1)), (m.group(2) or "").strip()
        if tool == "shell_execute" and pattern.endswith(":*"):
            pattern = pattern[:-2].strip()  # Claude Code's "git add:*" is monkey's "git add" prefix
        if tool not in set(CLAUDE_TOOLS.values()) and not tool.startswith("mcp__"):
            unknown.append(entry)
            continue
        rules.append(f"{tool}({pattern})" if pattern else tool)
    return rules, unknown


CHANGED = (
    "its allowed-tools grant nothing: its SKILL.md changed since this session started, so a person has "
    "not started a session with it as it is now"
)


def granted(skill: Skill) -> tuple[list[str], str]:
    """The allow rules loading ``skill`` gives for the turn, and why none when it gives none for
    that reason: a ``SKILL.md`` changed (or gone) since the session found it grants nothing."""
    rules, _ = tool_rules(skill)
    if rules and skill.changed():
        return [], CHANGED
    return rules, ""


@dataclass
class Skills:
    """The skills of a session, by name, and what discovering them found wrong."""

    by_name: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return self.by_name.get(name)

    def prompt(self, budget_chars: int) -> str:
        """The system prompt's list of skills (``name — description``), within ``budget_chars``."""
        if not self.by_name:
            return ""
        head = (
            "# Skills\n\nSkills are instructions for particular kinds of task, loaded when needed. "
            "Before doing a task one of these fits, call the `skill` tool with its name and follow "
            "what it says.\n"
        )
        lines, used, left = [], len(head), 0
        for skill in sorted(self.by_name.values(), key=lambda s: s.name):
            line = f"- {skill.name} — {skill.description}"
            if used + len(line) + 1 > budget_chars:
                left += 1
                continue
            lines.append(line)
            used += len(line) + 1
        tail = f"\n({left} more skills are not listed here for room.)" if left else ""
        return head + "\n".join(lines) + tail


def _folders(base: Path) -> list[Path]:
    try:
        return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _built_in() -> Path:
    return Path(str(resources.files("monkey") / "skills"))


def person_dirs() -> tuple[str, ...]:
    """The person's skill folders besides the monkey home's (see :data:`USER_DIRS`)."""
    env = os.environ.get("MONKEY_USER_SKILLS")
    return USER_DIRS if env is None else tuple(d for d in env.split(":") if d)


def discover(workspace: Path, *, home: Path, trusted: bool, user_dirs: tuple[str, ...] | None = None) -> Skills:
    """Every skill this session can use; a later source overrides a skill of the same name."""
    if user_dirs is None:
        user_dirs = person_dirs()
    found = Skills()
    places: list[tuple[Path, Source]] = [(_built_in(), "built-in"), (home / "skills", "user")]
    places += [(Path(d).expanduser(), "user") for d in user_dirs]
    if trusted:
        places += [(workspace / d, "project") for d in PROJECT_DIRS]
    for base, source in places:
        for folder in _folders(base):
            if not (folder / "SKILL.md").is_file():
                continue
            try:
                skill = parse_skill(folder, source)
            except SkillError as exc:
                found.warnings.append(f"skill skipped: {exc}")
                continue
            found.by_name[skill.name] = skill
    return found
