"""Rules and grants: what a rule string covers, and what a person's "for the session" or
"always" would grant.

Rules are strings: ``"file_edit"`` (every call of that tool), ``"file_write(docs/**)"``
(a path glob for file tools, relative to the workspace; ``"file_write(/abs/project/src/**)"``, an
absolute one, covers that folder of that workspace only), ``"shell_execute(git status)"`` (a command prefix,
compared word by word), ``"task(explore)"`` (a sub-agent), ``"mcp__server__*"`` (MCP tools),
``"web_fetch(domain:docs.python.org)"`` (a host; ``domain:*.python.org`` also its subdomains).
A command that needs shell syntax is never allowed by a rule or a grant for a prefix:
``git status; rm -rf x`` does not match ``git status``. It can only be approved by a
person, for that exact line.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from monkey.permissions.read_only import names_unsafe_form, rule_covers
from monkey.permissions.shell_parse import Origin, ParsedLine, parse_line
from monkey.safe_text import escape_controls
from monkey.tools.command_line import split_command
from monkey.tools.errors import ToolError
from monkey.tools.workspace import rule_paths

__all__ = [
    "EXIT_PLAN_MODE",
    "FILE_TOOLS",
    "MCP_PREFIX",
    "Rule",
    "RuleError",
    "SHELL_TOOL",
    "WEB_FETCH",
    "fetch_host",
    "grant_for",
    "grant_prefixes",
    "names_in_line",
    "rules_for",
    "starts_with",
]

SHELL_TOOL = "shell_execute"
WEB_FETCH = "web_fetch"
EXIT_PLAN_MODE = "exit_plan_mode"
"""The tool a model in plan mode proposes its plan with (see :mod:`monkey.agent.plan_mode`)."""
FILE_TOOLS = frozenset({"file_write", "file_edit", "file_delete"})


class RuleError(ValueError):
    """A rule string that cannot be parsed."""


_RULE = re.compile(r"^\s*([A-Za-z_][\w.-]*\*?)\s*(?:\((.*)\))?\s*$", re.S)
MCP_PREFIX = "mcp__"


def _covers_tool(rule: str, tool: str) -> bool:
    """Whether a rule's tool part names ``tool``: itself, or for MCP tools ``mcp__server`` (every
    tool of that server) and ``mcp__server__*`` (a name prefix)."""
    if rule == tool:
        return True
    if not rule.startswith(MCP_PREFIX) or not tool.startswith(MCP_PREFIX):
        return False
    if rule.endswith("*"):
        return tool.startswith(rule[:-1])
    return "__" not in rule[len(MCP_PREFIX) :] and tool.startswith(rule + "__")


@dataclass(frozen=True)
class Rule:
    """``tool`` or ``tool(argument pattern)``."""

    tool: str
    pattern: str = ""

    @classmethod
    def parse(cls, text: str) -> Rule:
        """Parse ``"tool"`` or ``"tool(pattern)"``."""
        m = _RULE.match(text)
        if not m:
            raise RuleError(f"bad approval rule {text!r}: expected 'tool' or 'tool(pattern)'")
        if m.group(1).endswith("*") and not m.group(1).startswith(MCP_PREFIX):
            raise RuleError(f"bad approval rule {text!r}: only MCP tool rules end in * (mcp__server__*)")
        return cls(m.group(1), (m.group(2) or "").strip())

    def __str__(self) -> str:
        return f"{self.tool}({self.pattern})" if self.pattern else self.tool

    def prefix(self) -> list[str]:
        """A command rule's words, its program named as a command would be (``/usr/bin/curl`` -> ``curl``).

        A prefix already covers any further arguments, so a last word ``*`` (``find *``) or a
        ``:*`` ending (``git:*``, ``git log:*``, as other agents write it) only says so again."""
        words = _words(self.pattern)
        if words and words[-1] == "*":
            words.pop()
        elif words and words[-1].endswith(":*"):
            words[-1] = words[-1][:-2]
            if not words[-1]:
                words.pop()
        if words and "/" in words[0]:
            words[0] = words[0].rsplit("/", 1)[1]
        return words

    def names_host(self, host: str) -> bool:
        """Whether a ``web_fetch(domain:HOST)`` rule covers ``host`` (``domain:*.example.com``: its
        subdomains and itself); a rule without ``domain:`` names no host."""
        if not self.pattern.lower().startswith("domain:") or not host:
            return False
        wanted = self.pattern[len("domain:") :].strip().rstrip(".").lower()
        if wanted.startswith("*."):
            return host == wanted[2:] or host.endswith(wanted[1:])
        return host == wanted

    def matches(self, tool: str, arguments: dict[str, Any], *, for_deny: bool, workspace: Path | None = None) -> bool:
        """Whether the rule covers a call (for a shell line: a deny rule, any command inside it).

        An allow rule for ``shell_execute`` is applied to a whole line by
        :class:`ApprovalPolicy` (every command in the line must be covered), not here.

        A path pattern is matched against the canonical workspace-relative path (symlinks
        followed, ``..`` removed; see :func:`~monkey.tools.workspace.rule_paths`): a deny rule
        also against the path as written, and an allow rule never covers a path that resolves
        outside the workspace.
        """
        if not _covers_tool(self.tool, tool):
            return False
        if not self.pattern:
            return True
        if tool == SHELL_TOOL:
            return for_deny and names_in_line(parse_line(str(arguments.get("command", ""))), self.prefix())
        if tool == "task":  # a sub-agent's rule names the agent: task(explore), task(*)
            return _glob(str(arguments.get("agent") or "general"), self.pattern)
        if tool == WEB_FETCH:
            return self.names_host(fetch_host(arguments))
        path = str(arguments.get("path", "") or ".")
        if workspace is None:
            return _glob(path.removeprefix("./"), self.pattern)
        canonical, lexical = rule_paths(workspace, path)
        if self.pattern.startswith("/"):  # an absolute pattern: the path as it is on the disk
            root = str(_root(workspace))
            canonical, lexical = (
                p if p.startswith("/") else root + ("" if p == "." else "/" + p) for p in (canonical, lexical)
            )
            inside = canonical.startswith(root + "/") or canonical == root
        else:
            inside = not canonical.startswith("/")
        if for_deny:
            return _glob(canonical, self.pattern) or _glob(lexical, self.pattern)
        return inside and _glob(canonical, self.pattern)


@lru_cache(maxsize=16)
def _root(workspace: Path) -> Path:
    return workspace.resolve()


def _escape_glob(text: str) -> str:
    """``text`` matched literally by :func:`_glob` (a folder named ``a[1]`` or ``*``)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _glob(path: str, pattern: str) -> bool:
    """``fnmatch`` where ``*`` also crosses ``/``, and a leading ``**/`` also matches at the top."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:])


def _words(text: str) -> list[str]:
    return list(_split(text))


@lru_cache(maxsize=4096)
def _split(text: str) -> tuple[str, ...]:
    """A rule's or grant's words, split once (every decision matches the same few rules)."""
    try:
        return tuple(split_command(text))
    except ToolError:
        return tuple(text.split())


def starts_with(words: list[str], prefix: list[str]) -> bool:
    return bool(prefix) and words[: len(prefix)] == prefix


_THREE_WORDS = frozenset(
    {
        ("npm", "run"),
        ("pnpm", "run"),
        ("yarn", "run"),
        ("bun", "run"),
        ("uv", "run"),
        ("poetry", "run"),
        ("pdm", "run"),
        ("hatch", "run"),
        ("docker", "compose"),
        ("podman", "compose"),
        ("python", "-m"),
        ("python3", "-m"),
        ("go", "mod"),
        ("cargo", "run"),
        ("gh", "pr"),
        ("gh", "issue"),
        ("kubectl", "get"),
    }
)
"""Commands whose first two words do not yet say what runs: ``npm run test``, ``docker compose up``."""


def _arity_prefix(argv: list[str]) -> list[str]:
    """What "approve for the session" covers of one command: the program, its subcommand if it
    has one, and the third word where the first two do not say what runs (``npm run test``)."""
    if len(argv) < 2 or argv[1].startswith("-") and (argv[0], argv[1]) not in _THREE_WORDS or "\0" in argv[1]:
        return argv[:1]
    if (argv[0], argv[1]) in _THREE_WORDS and len(argv) > 2 and "\0" not in argv[2]:
        return argv[:3]
    return argv[:2]


def grant_for(tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """The session grant a call would create: (key, description for a person).

    A shell line grants one argv prefix per simple command it runs (``git status && git
    diff``: ``git status`` and ``git diff``); a line the parser cannot vouch for grants only
    itself, exactly.
    """
    if tool == SHELL_TOOL:
        command = str(arguments.get("command", ""))
        prefixes = _line_prefixes(command)
        if not prefixes:
            parsed = parse_line(command)
            why = parsed.unsafe[0] if parsed.unsafe else "no command"
            return f"{tool}\0line\0{command}", f"this exact command line only ({why})"
        shown = ", ".join(f"`{escape_controls(p)}`" for p in prefixes)
        return f"{tool}\0prefix\0" + "\n".join(prefixes), f"commands starting with {shown}"
    if tool == WEB_FETCH:
        host = fetch_host(arguments)
        return f"{tool}\0domain\0{host}", f"fetching pages from {escape_controls(host) or 'this URL'}"
    return tool, f"every {tool} call inside the workspace"


def _line_prefixes(command: str) -> list[str]:
    """The argv prefix of each simple command of a line the parser vouches for ([] otherwise)."""
    parsed = parse_line(command)
    if parsed.unsafe or not parsed.commands:
        return []
    return list(
        dict.fromkeys(
            shlex.join(_covering_prefix(argv, origin))
            for argv, origin in zip(parsed.commands, parsed.origins, strict=True)
        )
    )


def _covering_prefix(argv: list[str], origin: Origin) -> list[str]:
    """The prefix a grant or rule for ``argv`` gets: its arity prefix, or, where that would name
    only the read-only forms of a program with a read-only table (``sed`` for ``sed -i ...``), the
    shortest prefix naming the unsafe form (``sed -i``, ``find . -delete``; the whole command if none)."""
    prefix = _arity_prefix(argv)
    if rule_covers(prefix, argv, origin):
        return prefix
    return next((argv[:k] for k in range(2, len(argv)) if names_unsafe_form(argv[:k])), argv)


def rules_for(tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> list[str]:
    """The rules "always allow" saves for a call: one argv-prefix rule per simple command of a
    shell line (none for a line the parser cannot vouch for); for a file tool, the path's folder in
    this workspace, absolute (``file_write(/home/me/proj/src/**)``; none without a workspace, or for a
    path outside it); the tool itself otherwise."""
    if tool == SHELL_TOOL:
        return [f"{tool}({prefix})" for prefix in _line_prefixes(str(arguments.get("command", "")))]
    if tool == WEB_FETCH:
        host = fetch_host(arguments)
        return [f"{tool}(domain:{host})"] if host and re.fullmatch(r"[a-z0-9.:-]+", host) else []
    if tool in FILE_TOOLS:
        if workspace is None:
            return []
        canonical, _ = rule_paths(workspace, str(arguments.get("path", "") or "."))
        if canonical.startswith("/") or canonical == ".":
            return []
        folder = _root(workspace) / canonical.rpartition("/")[0] if "/" in canonical else _root(workspace)
        return [f"{tool}({_escape_glob(str(folder))}/**)"]
    return [tool]


def fetch_host(arguments: dict[str, Any]) -> str:
    """The host a ``web_fetch`` call's URL names, lower case (``""`` for none)."""
    from urllib.parse import urlsplit

    try:
        return (urlsplit(str(arguments.get("url", "")).strip()).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def grant_prefixes(key: str, tool: str) -> list[list[str]]:
    parts = key.split("\0", 2)
    if len(parts) != 3 or parts[0] != tool or parts[1] != "prefix":
        return []
    return [_words(p) for p in parts[2].split("\n") if p]


def names_in_line(parsed: ParsedLine, prefix: list[str]) -> bool:
    """Whether a deny rule's words name a simple command anywhere in the line, or a wrapper it ran."""
    if not prefix:
        return True
    return (len(prefix) == 1 and prefix[0] in parsed.wrappers) or any(
        argv and argv[0] == prefix[0] and starts_with(argv, prefix) for argv in parsed.commands
    )
