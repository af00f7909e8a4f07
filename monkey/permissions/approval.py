"""Who may run a dangerous tool call: rules, session grants, and an injected ``Approver``.

The loop asks :class:`ApprovalPolicy` first (deny rules, ``--no-approval``, allow rules,
grants made earlier in this session); only when nothing decides does it ask the
:class:`Approver` it was given: the TUI answers with a modal, the terminal with an inline
prompt, headless runs with :class:`HeadlessApprover`, which denies and says why.

Rules are strings: ``"file_edit"`` (every call of that tool), ``"file_write(docs/**)"``
(a path glob for file tools), ``"shell_execute(git status)"`` (a command prefix,
compared word by word). A command that needs shell syntax is never allowed by a rule or
a grant for a prefix: ``git status; rm -rf x`` does not match ``git status``. It can only
be approved by a person, for that exact line.

The policy's :mod:`mode <monkey.modes>` says how much runs without asking; deny rules
decide first in every mode, and :mod:`protected <monkey.permissions.protected>` calls need a person's
approval of that exact call whatever the mode, rules and grants say.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from monkey.safe_text import escape_controls, invisible_warnings
from monkey.permissions.read_only import ReadOnly, reads_denied
from monkey.modes import DESCRIPTIONS, Mode
from monkey.permissions.protected import protected_command, protected_file
from monkey.permissions.shell_parse import ParsedLine, parse_line
from monkey.tools.command_line import needs_shell, split_command
from monkey.tools.errors import ToolError
from monkey.tools.workspace import rule_paths

__all__ = [
    "ApprovalRequest",
    "Decision",
    "STOP_REASON",
    "stopped_by_user",
    "Approver",
    "ApprovalPolicy",
    "HeadlessApprover",
    "Rule",
    "RuleError",
    "grant_for",
    "rules_for",
]

SHELL_TOOL = "shell_execute"
EXIT_PLAN_MODE = "exit_plan_mode"
"""The tool a model in plan mode proposes its plan with (see :mod:`monkey.agent.plan_mode`)."""
FILE_TOOLS = frozenset({"file_write", "file_edit", "file_delete"})


@dataclass(frozen=True)
class ApprovalRequest:
    """One dangerous call waiting for a decision, with what a person needs to judge it."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    summary: str
    """The command line (escaped) or the diff the call would apply."""
    warnings: list[str] = field(default_factory=list)
    grant: str = ""
    """What "approve for this session" would cover, in words (empty: only this call may be approved)."""
    rules: list[str] = field(default_factory=list)
    """The rules "always allow" would save to the user's config (empty: not offered)."""
    person_only: str = ""
    """Why only a person's approval of this exact call can let it run (a protected path, a huge file)."""
    unsandboxed: bool = False
    """A command that, approved by a person, runs as theirs: outside the sandbox (the dialog says so)."""
    no_sandbox: bool = False
    """In auto mode, asked only because no sandbox can hold commands here."""
    plan: str = ""
    """A plan to review (``exit_plan_mode``): front ends show their plan dialog instead of the approval."""
    asker: str = ""
    """Who asks, when not the session's own agent: a sub-agent, ``explore (sub-agent): find the tests``."""
    recheck: Callable[[], Decision | None] | None = field(default=None, compare=False, repr=False)
    """The permission engine's decision on the call as its rules, grants and mode stand now, or None when a
    person must still be asked. An approver that kept the request waiting (behind another one) asks this first:
    a grant given meanwhile may cover it. None: only a person can decide it (a protected path, a hook's ask)."""

    def decided_now(self) -> Decision | None:
        """The engine's decision from :attr:`recheck`, or None: a person decides (also when the check fails)."""
        if self.recheck is None:
            return None
        try:
            return self.recheck()
        except Exception:  # noqa: BLE001 - the person is asked, as without the engine's second look
            return None


@dataclass(frozen=True)
class Decision:
    """An answer to an :class:`ApprovalRequest`."""

    approved: bool
    scope: Literal["once", "session", "always"] = "once"
    """``always``: for the session, and the request's rules saved to the user's config."""
    by: Literal["user", "rule", "session", "policy"] = "user"
    reason: str = ""
    stop: bool = False
    """For a denial: stop the turn instead of telling the model and going on."""
    exact_line: bool = False
    """A person approved this exact shell line (so shell syntax may run through a shell)."""
    mode: str = ""
    """For an approved plan: the mode the session goes on in (empty: ``default``; ``plan``: recorded only)."""
    save: bool = False
    """For an approved plan: also keep it in the project's ``.monkey/plans/``."""


STOP_REASON = "the user stopped the turn"
"""Why a call was refused when the person stopped the turn instead of answering (Esc, Ctrl-C, EOF)."""


def stopped_by_user(reason: str = STOP_REASON) -> Decision:
    """A person's refusal that stops the turn, not only the call."""
    return Decision(approved=False, by="user", reason=reason, stop=True)


class Approver(Protocol):
    """Asks someone (or something) about a call no rule decided."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        """The decision for ``request``; may wait as long as a person needs."""
        ...


class HeadlessApprover:
    """Denies everything a rule did not allow, with a reason the model and user can read.

    A plan (``exit_plan_mode``) is recorded and the session stays in plan mode, unless
    ``approve_plan`` names the mode an approved plan goes on in (``--approve-plan``).
    """

    def __init__(self, approve_plan: str = "") -> None:
        self.approve_plan = approve_plan
        """``default`` or ``accept-edits``: approve every plan and go on in that mode; empty: only record it."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Deny ``request``: nobody is there to ask."""
        if request.plan:
            if self.approve_plan:
                return Decision(approved=True, by="policy", mode=self.approve_plan,
                                reason=f"approved by --approve-plan {self.approve_plan}")
            return Decision(approved=True, by="policy", mode="plan",
                            reason="recorded: nobody is here to approve the plan (--approve-plan MODE approves it)")
        return Decision(
            approved=False,
            by="policy",
            reason=(
                f"needs a person's approval of this exact call ({request.person_only}) "
                "and there is no terminal to ask on"
                if request.person_only else
                "needs approval and there is no terminal to ask on: without a sandbox here, every shell "
                "command does, even with --no-approval; allow it with a rule in [approvals] allow"
                if request.no_sandbox else
                "needs approval and there is no terminal to ask on; "
                "allow it with a rule in [approvals] allow, or run with --no-approval"
            ),
        )


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
    return "__" not in rule[len(MCP_PREFIX):] and tool.startswith(rule + "__")


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
        """A command rule's words, its program named as a command would be (``/usr/bin/curl`` -> ``curl``)."""
        words = _words(self.pattern)
        if words and "/" in words[0]:
            words[0] = words[0].rsplit("/", 1)[1]
        return words

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
            return for_deny and _names(parse_line(str(arguments.get("command", ""))), self.prefix())
        if tool == "task":  # a sub-agent's rule names the agent: task(explore), task(*)
            return _glob(str(arguments.get("agent") or "general"), self.pattern)
        path = str(arguments.get("path", "") or ".")
        if workspace is None:
            return _glob(path.removeprefix("./"), self.pattern)
        canonical, lexical = rule_paths(workspace, path)
        if for_deny:
            return _glob(canonical, self.pattern) or _glob(lexical, self.pattern)
        return not canonical.startswith("/") and _glob(canonical, self.pattern)


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


def _starts_with(words: list[str], prefix: list[str]) -> bool:
    return bool(prefix) and words[: len(prefix)] == prefix


_THREE_WORDS = frozenset({
    ("npm", "run"), ("pnpm", "run"), ("yarn", "run"), ("bun", "run"), ("uv", "run"), ("poetry", "run"),
    ("pdm", "run"), ("hatch", "run"), ("docker", "compose"), ("podman", "compose"), ("python", "-m"),
    ("python3", "-m"), ("go", "mod"), ("cargo", "run"), ("gh", "pr"), ("gh", "issue"), ("kubectl", "get"),
})
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
    return tool, f"every {tool} call inside the workspace"


def _line_prefixes(command: str) -> list[str]:
    """The argv prefix of each simple command of a line the parser vouches for ([] otherwise)."""
    parsed = parse_line(command)
    if parsed.unsafe or not parsed.commands:
        return []
    return list(dict.fromkeys(shlex.join(_arity_prefix(argv)) for argv in parsed.commands))


def rules_for(tool: str, arguments: dict[str, Any]) -> list[str]:
    """The rules "always allow" saves for a call: one argv-prefix rule per simple command of a
    shell line (none for a line the parser cannot vouch for), the tool itself otherwise."""
    if tool == SHELL_TOOL:
        return [f"{tool}({prefix})" for prefix in _line_prefixes(str(arguments.get("command", "")))]
    return [tool]


def _grant_prefixes(key: str, tool: str) -> list[list[str]]:
    parts = key.split("\0", 2)
    if len(parts) != 3 or parts[0] != tool or parts[1] != "prefix":
        return []
    return [_words(p) for p in parts[2].split("\n") if p]


_NO_WORKSPACE = Path("/nonexistent-workspace")


@lru_cache(maxsize=16)
def _resolved(workspace: Path) -> Path:
    """The workspace with symlinks resolved, once per workspace (every decision asks)."""
    return workspace.resolve()


_BUILTIN_READS = ReadOnly()
"""Commands that only read, whatever the config says: naming a protected path, they only read it."""
_READ_ONLY = Decision(approved=True, by="rule", reason="read-only command", exact_line=True)


@lru_cache(maxsize=1024)
def _allowed(by: Literal["rule", "session"], reason: str) -> Decision:
    """The decision a rule or grant gives every line it covers (made once: a decision is immutable)."""
    return Decision(approved=True, by=by, reason=reason, exact_line=True)


def _names(parsed: ParsedLine, prefix: list[str]) -> bool:
    """Whether a deny rule's words name a simple command anywhere in the line, or a wrapper it ran."""
    if not prefix:
        return True
    return (len(prefix) == 1 and prefix[0] in parsed.wrappers) or any(
        argv and argv[0] == prefix[0] and _starts_with(argv, prefix) for argv in parsed.commands)


def _approve(by: Literal["user", "rule", "session", "policy"], reason: str, exact_line: bool = False) -> Decision:
    return Decision(approved=True, by=by, reason=reason, exact_line=exact_line)


def _refuse(reason: str) -> Decision:
    return Decision(approved=False, by="policy", reason=reason)


PLAN_REFUSAL = "plan mode is read-only: monkey only reads and plans (Shift+Tab or /mode default to make changes)"


@dataclass
class ApprovalPolicy:
    """Rules, grants and the mode: what decides a call without asking anyone."""

    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    mode: Mode = "default"
    grants: dict[str, str] = field(default_factory=dict)
    """Session grants: key -> description."""
    protected_roots: tuple[Path, ...] = ()
    """Folders outside the workspace's ``.git/`` and ``.monkey/`` that need a person (monkey's home)."""
    auto_allowed: bool = False
    """Whether the person may switch this session into ``auto`` (it started in it, or the config allows it)."""
    save_rules: Callable[[list[str]], None] | None = None
    """Where "always allow" rules are saved (the user's config); None: only for the session."""
    read_only: ReadOnly | None = field(default_factory=ReadOnly)
    """Commands that only read, allowed like an allow rule in every mode (None: none are)."""
    turn_rules: list[Rule] = field(default_factory=list)
    """Allow rules that hold for the running turn only (see :meth:`allow_for_turn`)."""
    mode_pinned: bool = False
    """The mode was chosen on the command line (``--mode``, ``--no-approval``): resuming keeps it
    instead of going back to the mode the stored session was left in."""
    sandboxed: bool = True
    """Shell commands run in a sandbox (:mod:`monkey.tools.sandbox`); without one, ``--no-approval``
    approves no shell command: each goes to a person (so headless refuses them)."""

    @classmethod
    def from_strings(
        cls, allow: Iterable[str] = (), deny: Iterable[str] = (), *, no_approval: bool = False,
        mode: Mode | None = None, read_only: bool = True, read_only_extra: Iterable[str] = (),
    ) -> ApprovalPolicy:
        """Build a policy from rule strings (raises :class:`RuleError`)."""
        try:
            commands = ReadOnly(builtin=read_only, extra=read_only_extra)
        except ValueError as exc:
            raise RuleError(str(exc)) from None
        chosen: Mode = mode or ("auto" if no_approval else "default")
        return cls([Rule.parse(r) for r in allow], [Rule.parse(r) for r in deny], chosen,
                   auto_allowed=chosen == "auto", read_only=commands)

    @property
    def no_approval(self) -> bool:
        """Whether nothing asks (``auto`` mode)."""
        return self.mode == "auto"

    def set_mode(self, mode: Mode) -> str:
        """Switch mode; returns a line saying what the new mode lets run."""
        if mode == "auto":
            self.auto_allowed = True
        self.mode = mode
        return f"mode: {mode} — {DESCRIPTIONS[mode]}"

    def denied(self, tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> Decision | None:
        """The denial of the first deny rule that covers a call (any tool, reads included), or None."""
        if tool == SHELL_TOOL:
            return self._line_denied(str(arguments.get("command", "")))
        for rule in self.deny:
            if rule.matches(tool, arguments, for_deny=True, workspace=workspace):
                return Decision(approved=False, by="rule", reason=f"denied by rule {rule}")
        return None

    def _shell_rules(self, rules: list[Rule]) -> tuple[list[tuple[Rule, list[str]]], list[tuple[list[str], Decision]]]:
        """The shell rules among ``rules`` with their words, and (as an allow rule would cover a
        command) those words with the decision they give; worked out once while the list stays the same."""
        memo = self.__dict__.setdefault("_rule_memo", {})
        now = tuple(rules)
        saved = memo.get(id(rules))
        if saved is None or saved[0] != now:  # the rules are kept alive here, so the list's id is never another's
            shell = [(rule, rule.prefix()) for rule in rules if rule.tool == SHELL_TOOL]
            covering = [(prefix, _allowed("rule", f"allowed by rule {rule}")) for rule, prefix in shell]
            saved = memo[id(rules)] = (now, shell, covering)
        return saved[1], saved[2]

    def _line_denied(self, command: str) -> Decision | None:
        """A deny rule for ``shell_execute`` that covers any command of the line (or a wrapper it names)."""
        rules, _ = self._shell_rules(self.deny)
        if not rules:
            return None
        parsed = parse_line(command)
        for rule, prefix in rules:
            if _names(parsed, prefix):
                return Decision(approved=False, by="rule", reason=f"denied by rule {rule}")
        return None

    def needs_person(self, tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> str | None:
        """Why a call touches the protected set, so only a person's approval of it can let it run."""
        if tool == SHELL_TOOL:
            parsed = parse_line(str(arguments.get("command", "")))
            ws = _resolved(workspace) if workspace is not None else _NO_WORKSPACE
            for argv, origin in zip(parsed.commands, parsed.origins):
                why = protected_command(argv, ws, self.protected_roots)
                if why is not None and not _BUILTIN_READS.covers(argv, origin):  # reading it is no harm
                    return why
            for target in parsed.writes:
                why = protected_command(["\0write", target], ws, self.protected_roots)
                if why is not None:
                    return why
            return None
        if tool in FILE_TOOLS and workspace is not None and self.protected_roots:
            canonical, _ = rule_paths(workspace, str(arguments.get("path", "") or "."))
            if not canonical.startswith("/"):
                canonical = str(workspace.resolve() / canonical)
            return protected_file(canonical, self.protected_roots)
        return None

    def check(self, tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> Decision | None:
        """A decision from rules, grants and the mode, or ``None`` when someone must be asked.

        ``workspace``: where paths are resolved before path rules are matched (without it,
        paths are matched as written).
        """
        denial = self.denied(tool, arguments, workspace)
        if denial is not None:
            return denial
        if tool == EXIT_PLAN_MODE:  # a plan: always for a person to decide, and only in plan mode
            return None if self.mode == "plan" else _refuse("exit_plan_mode is for plan mode only; this session "
                                                            f"is in {self.mode} mode")
        if tool == SHELL_TOOL:
            decision = self._check_line(str(arguments.get("command", "")), workspace)
            if decision is not None and decision.approved and self.needs_person(tool, arguments, workspace):
                return None  # a protected call: only a person's approval of it (asked only when it would run)
            return decision
        if self.needs_person(tool, arguments, workspace) is not None:
            return _refuse(PLAN_REFUSAL) if self.mode == "plan" else None
        if self.mode == "plan":
            return _refuse(PLAN_REFUSAL)
        if tool in self.grants:
            return _approve("session", f"session grant: {self.grants[tool]}")
        if self.mode == "auto":
            return _approve("policy", "auto mode (--no-approval)")
        if self.mode == "accept-edits" and tool in FILE_TOOLS:
            return _approve("policy", "accept-edits mode")
        for rule in self.allow:
            if rule.matches(tool, arguments, for_deny=False, workspace=workspace):
                return _approve("rule", f"allowed by rule {rule}")
        return None

    def _check_line(self, command: str, workspace: Path | None = None) -> Decision | None:
        """A shell line no deny rule covers: allowed only when every simple command in it is.

        A line the parser vouches for may then run through a shell (``exact_line``); one it
        cannot vouch for (substitutions, redirection to a file, ``eval``, a parse error) is
        never allowed by a rule or a prefix grant, only by a person or a grant of that exact line.
        """
        if self.mode == "plan":
            if self.read_only is not None and self.read_only.covers_line(
                    command, read_denied=self._read_denials(), workspace=workspace):
                return _READ_ONLY
            return _refuse(PLAN_REFUSAL)
        exact = self.grants.get(f"{SHELL_TOOL}\0line\0{command}") if self.grants else None
        if exact is not None:
            return _approve("session", f"session grant: {exact}", exact_line=True)
        parsed = parse_line(command)
        safe = not parsed.unsafe and bool(parsed.commands)
        if SHELL_TOOL in self.grants and safe:
            return _approve("session", f"session grant: {self.grants[SHELL_TOOL]}", exact_line=True)
        if self.mode == "auto" and self.sandboxed:
            return _approve("policy", "auto mode (--no-approval)", exact_line=safe)
        if not safe:
            return None
        covering: list[tuple[list[str], Decision]] = []
        for key, what in self.grants.items():
            for prefix in _grant_prefixes(key, SHELL_TOOL):
                covering.append((prefix, _allowed("session", f"session grant: {what}")))
        covering += self._shell_rules(self.allow)[1]
        decisions: list[Decision] = []
        for argv, origin in zip(parsed.commands, parsed.origins):
            first = argv[0] if argv else ""
            found = next((d for prefix, d in covering
                          if not prefix or (prefix[0] == first and _starts_with(argv, prefix))), None)
            if found is None and self._reads(argv, origin, workspace):
                found = _READ_ONLY
            if found is None:
                return None
            decisions.append(found)
        reasons = list(dict.fromkeys(d.reason for d in decisions))
        by = "session" if all(d.by == "session" for d in decisions) else "rule"
        return Decision(approved=True, by=by, reason="; ".join(reasons), exact_line=True)

    def _read_denials(self) -> list[Rule]:
        return [r for r in self.deny if r.tool == "file_read"]

    def _reads(self, argv: list[str], origin: Any, workspace: Path | None) -> bool:
        """Whether one command only reads, and reads nothing a ``file_read`` deny rule covers."""
        if self.read_only is None or not self.read_only.covers(argv, origin):
            return False
        denials = self._read_denials()
        return not denials or not reads_denied(argv, origin, denials, workspace)

    def remember(self, tool: str, arguments: dict[str, Any]) -> str:
        """Record a session grant for a call a person approved for the session."""
        key, what = grant_for(tool, arguments)
        self.grants[key] = what
        return what

    def keep(self, tool: str, arguments: dict[str, Any]) -> list[str]:
        """"Always allow": the call's rules join the allow rules and go to :attr:`save_rules`.

        Returns the rules saved; raises ``OSError`` when the user's config cannot be written
        (the rules then still hold for this session).
        """
        rules = [r for r in rules_for(tool, arguments) if Rule.parse(r) not in self.allow]
        self.allow.extend(Rule.parse(r) for r in rules)
        if rules and self.save_rules is not None:
            self.save_rules(rules)
        return rules

    def forget_rule(self, rule: str) -> None:
        """Drop an allow rule from this session (the caller removes it from the config file)."""
        parsed = Rule.parse(rule)
        self.allow = [r for r in self.allow if r != parsed]

    def revoke(self, key: str) -> None:
        """Forget one session grant."""
        self.grants.pop(key, None)

    def allow_for_turn(self, rules: Iterable[str]) -> list[str]:
        """Allow rules for the running turn only (a skill's ``allowed-tools``); the ones added."""
        added = [rule for rule in dict.fromkeys(Rule.parse(r) for r in rules) if rule not in self.allow]
        self.allow.extend(added)
        self.turn_rules.extend(added)
        return [str(rule) for rule in added]

    def end_turn(self) -> None:
        """Drop the rules :meth:`allow_for_turn` added."""
        if self.turn_rules:
            self.allow = [rule for rule in self.allow if rule not in self.turn_rules]
            self.turn_rules.clear()


def build_request(
    call_id: str, tool: str, arguments: dict[str, Any], preview: str
) -> ApprovalRequest:
    """The request a person sees: the exact command with hidden characters shown, or the diff."""
    warnings: list[str] = []
    if tool == SHELL_TOOL:
        command = str(arguments.get("command", ""))
        summary = escape_controls(command, keep_newlines=False, strict=True)
        warnings = invisible_warnings(command)
        construct = needs_shell(command)
        if construct is not None:
            warnings.append(f"runs through a shell ({construct})")
    else:
        summary = escape_controls(preview or f"{tool} {arguments.get('path', '')}", strict=not preview)
        warnings = invisible_warnings(str(arguments.get("path", "")))
    if tool == EXIT_PLAN_MODE:  # a plan is approved once, never for the session or for good
        plan = str(arguments.get("plan", ""))
        hidden = [w for w in invisible_warnings(plan) if "newline" not in w]  # a plan has lines
        return ApprovalRequest(call_id, tool, arguments, escape_controls(plan), hidden, plan=plan or " ")
    _, grant = grant_for(tool, arguments)
    return ApprovalRequest(call_id, tool, arguments, summary, warnings, grant, rules_for(tool, arguments))
