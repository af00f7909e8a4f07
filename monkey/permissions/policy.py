"""The policy: rules, session grants and the mode, which decide a call without asking anyone.

The policy's :mod:`mode <monkey.modes>` says how much runs without asking; deny rules
decide first in every mode, and :mod:`protected <monkey.permissions.protected>` calls need a
person's approval of that exact call whatever the mode, rules and grants say. What the policy
leaves open a person decides: :func:`monkey.permissions.decide.decide` puts it together.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from monkey.modes import DESCRIPTIONS, Mode, stricter_mode
from monkey.permissions.git_repo import git_line_runs_code
from monkey.permissions.protected import Guarded, protected_command, protected_file
from monkey.permissions.read_only import ReadOnly, reads_denied, rule_covers
from monkey.permissions.requests import Decision
from monkey.permissions.rules import (
    EXIT_PLAN_MODE,
    FILE_TOOLS,
    SHELL_TOOL,
    WEB_FETCH,
    Rule,
    RuleError,
    fetch_host,
    grant_for,
    grant_prefixes,
    names_in_line,
    rules_for,
    starts_with,
)
from monkey.permissions.shell_parse import parse_line
from monkey.tools.workspace import rule_paths

__all__ = ["ApprovalPolicy", "PLAN_REFUSAL"]

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
    guarded: Guarded = field(default_factory=Guarded)
    """Config or code monkey runs, in the workspace (and a home or ``/`` it holds): a person's approval each time."""
    auto_allowed: bool = False
    """Whether the person may switch this session into ``auto`` (it started in it, or the config allows it)."""
    save_rules: Callable[[list[str]], None] | None = None
    """Where "always allow" rules are saved (the user's config); None: only for the session."""
    read_only: ReadOnly | None = field(default_factory=ReadOnly)
    """Commands that only read, allowed like an allow rule in every mode (None: none are)."""
    turn_rules: list[Rule] = field(default_factory=list)
    """Allow rules that hold for the running turn only (see :meth:`allow_for_turn`)."""
    kept: list[Rule] = field(default_factory=list)
    """Rules a person kept "for good" during this session (:meth:`keep`); the list is shared with
    sub-agents' policies (as :attr:`grants` is), so one child's answer holds for the whole tree."""
    mode_pinned: bool = False
    """The mode was chosen on the command line (``--mode``, ``--no-approval``): resuming keeps it
    instead of going back to the mode the stored session was left in."""
    sandboxed: bool = True
    """Shell commands run in a sandbox (:mod:`monkey.tools.sandbox`); without one, ``--no-approval``
    approves no shell command: each goes to a person (so headless refuses them)."""
    _led: list[tuple[weakref.ref[ApprovalPolicy], Mode]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )
    """The policies of running sub-agents (:meth:`lead`), with the mode each started in."""

    @classmethod
    def from_strings(
        cls,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        *,
        no_approval: bool = False,
        mode: Mode | None = None,
        read_only: bool = True,
        read_only_extra: Iterable[str] = (),
    ) -> ApprovalPolicy:
        """Build a policy from rule strings (raises :class:`RuleError`)."""
        try:
            commands = ReadOnly(builtin=read_only, extra=read_only_extra)
        except ValueError as exc:
            raise RuleError(str(exc)) from None
        chosen: Mode = mode or ("auto" if no_approval else "default")
        return cls(
            [Rule.parse(r) for r in allow],
            [Rule.parse(r) for r in deny],
            chosen,
            auto_allowed=chosen == "auto",
            read_only=commands,
        )

    @property
    def no_approval(self) -> bool:
        """Whether nothing asks (``auto`` mode)."""
        return self.mode == "auto"

    def set_mode(self, mode: Mode) -> str:
        """Switch mode, at once for the sub-agents this policy leads too; returns a line saying what the
        new mode lets run."""
        if mode == "auto":
            self.auto_allowed = True
        self.mode = mode
        led = []
        for ref, started in self._led:
            child = ref()
            if child is not None:
                child.set_mode(stricter_mode(mode, started))  # type: ignore[arg-type]
                led.append((ref, started))
        self._led[:] = led
        return f"mode: {mode} — {DESCRIPTIONS[mode]}"

    def lead(self, child: ApprovalPolicy, wanted: str = "") -> None:
        """Make ``child`` (a sub-agent's policy, running or in the background) follow this policy's mode:
        it starts in ``wanted`` when that is stricter than this one's, and from then on is never more
        permissive than this policy nor than the mode it started in, whatever either switches to."""
        child.mode = stricter_mode(self.mode, wanted)  # type: ignore[assignment]
        self._led.append((weakref.ref(child), child.mode))

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
            if names_in_line(parsed, prefix):
                return Decision(approved=False, by="rule", reason=f"denied by rule {rule}")
        return None

    def needs_person(self, tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> str | None:
        """Why a call touches the protected set, so only a person's approval of it can let it run."""
        if tool == SHELL_TOOL:
            parsed = parse_line(str(arguments.get("command", "")))
            ws = _resolved(workspace) if workspace is not None else _NO_WORKSPACE
            for argv, origin in zip(parsed.commands, parsed.origins, strict=True):
                why = protected_command(argv, ws, self.protected_roots, self.guarded)
                if why is not None and not _BUILTIN_READS.covers(argv, origin):  # reading it is no harm
                    return why
            for target in parsed.writes:
                why = protected_command(["\0write", target], ws, self.protected_roots, self.guarded)
                if why is not None:
                    return why
            return None
        if tool in FILE_TOOLS and workspace is not None:
            canonical, lexical = rule_paths(workspace, str(arguments.get("path", "") or "."))
            return protected_file(canonical, self.protected_roots, self.guarded, _resolved(workspace), lexical)
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
            return (
                None
                if self.mode == "plan"
                else _refuse(f"exit_plan_mode is for plan mode only; this session is in {self.mode} mode")
            )
        if tool == SHELL_TOOL:
            command = str(arguments.get("command", ""))
            decision = self._check_line(command, workspace)
            if (
                decision is not None
                and decision.approved
                and (self.needs_person(tool, arguments, workspace) or self.line_reads_denied(command, workspace))
            ):
                return None  # a protected call or a denied read: a person (asked only when it would run)
            return decision
        if self.needs_person(tool, arguments, workspace) is not None:
            return _refuse(PLAN_REFUSAL) if self.mode == "plan" else None
        if tool == WEB_FETCH:
            return self._check_fetch(arguments)
        if self.mode == "plan":
            return _refuse(PLAN_REFUSAL)
        if tool in self.grants:
            return _approve("session", f"session grant: {self.grants[tool]}")
        if self.mode == "auto":
            return _approve("policy", "auto mode (--no-approval)")
        if self.mode == "accept-edits" and tool in FILE_TOOLS:
            return _approve("policy", "accept-edits mode")
        for rule in (*self.allow, *self.kept) if self.kept else self.allow:
            if rule.matches(tool, arguments, for_deny=False, workspace=workspace):
                return _approve("rule", f"allowed by rule {rule}")
        return None

    def _check_fetch(self, arguments: dict[str, Any]) -> Decision | None:
        """A page fetch: reads nothing of the workspace, so plan mode may ask for it; but it reaches the
        network, which no mode opens by itself (``auto``'s sandbox has none): a grant for its host or an
        allow rule lets it run, otherwise a person is asked."""
        host = fetch_host(arguments)
        grant = self.grants.get(f"{WEB_FETCH}\0domain\0{host}") if host and self.grants else None
        if grant is not None:
            return _approve("session", f"session grant: {grant}")
        for rule in (*self.allow, *self.kept) if self.kept else self.allow:
            if rule.matches(WEB_FETCH, arguments, for_deny=False):
                return _approve("rule", f"allowed by rule {rule}")
        return None

    def names_host(self, host: str) -> bool:
        """Whether an allow rule names ``host`` for ``web_fetch`` (only then may it reach a private address)."""
        return any(rule.tool == WEB_FETCH and rule.names_host(host) for rule in (*self.allow, *self.kept))

    def _check_line(self, command: str, workspace: Path | None = None) -> Decision | None:
        """A shell line no deny rule covers: allowed only when every simple command in it is.

        A line the parser vouches for may then run through a shell (``exact_line``); one it
        cannot vouch for (substitutions, redirection to a file, ``eval``, a parse error) is
        never allowed by a rule or a prefix grant, only by a person or a grant of that exact line.
        """
        if self.mode == "plan":
            if (
                self.read_only is not None
                and self.read_only.covers_line(command, read_denied=self._read_denials(), workspace=workspace)
                and not git_line_runs_code(parse_line(command).commands, workspace or Path.cwd())
            ):
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
            if parsed.blind:  # it may run code no rule saw (``$cmd``, bash's arithmetic, ``${x@P}``)
                return None
            return _approve("policy", "auto mode (--no-approval)", exact_line=safe)
        if not safe:
            return None
        covering: list[tuple[list[str], Decision]] = []
        for key, what in self.grants.items():
            for prefix in grant_prefixes(key, SHELL_TOOL):
                covering.append((prefix, _allowed("session", f"session grant: {what}")))
        covering += self._shell_rules(self.allow)[1]
        decisions: list[Decision] = []
        for argv, origin in zip(parsed.commands, parsed.origins, strict=True):
            first = argv[0] if argv else ""
            found = next(
                (
                    d
                    for prefix, d in covering
                    if not prefix
                    or (prefix[0] == first and starts_with(argv, prefix) and rule_covers(prefix, argv, origin))
                ),
                None,
            )
            if (
                found is None
                and self._reads(argv, origin, workspace)
                and not (first == "git" and git_line_runs_code(parsed.commands, workspace or Path.cwd()))
            ):
                found = _READ_ONLY
            if found is None:
                return None
            decisions.append(found)
        reasons = list(dict.fromkeys(d.reason for d in decisions))
        by: Literal["session", "rule"] = "session" if all(d.by == "session" for d in decisions) else "rule"
        return Decision(approved=True, by=by, reason="; ".join(reasons), exact_line=True)

    def line_reads_denied(self, command: str, workspace: Path | None = None) -> bool:
        """Whether a shell line may read what a ``file_read`` deny rule protects, so that no mode,
        rule or grant lets it run without a person (a grant of that exact line aside: a person saw it).

        Every command of the line is checked as :func:`reads_denied` checks a read-only one, its
        input redirections too, and each path also from every folder the line ``cd``s into."""
        denials = self._read_denials()
        if not denials or (self.grants and f"{SHELL_TOOL}\0line\0{command}" in self.grants):
            return False
        parsed = parse_line(command)
        folders = [argv[1] if len(argv) > 1 else "\0home" for argv in parsed.commands if argv[0] in ("cd", "pushd")]
        if any("\0" in f or f.startswith(("~", "-")) for f in folders):
            return True
        for argv, origin in [
            *zip(parsed.commands, parsed.origins, strict=True),
            *((["<", r], None) for r in parsed.reads),
        ]:
            for folder in ["", *folders]:
                moved = [argv[0], *(a if not folder or a.startswith(("-", "/")) else f"{folder}/{a}" for a in argv[1:])]
                if reads_denied(moved, origin, denials, workspace):
                    return True
        return False

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

    def keep(self, tool: str, arguments: dict[str, Any], workspace: Path | None = None) -> list[str]:
        """ "Always allow": the call's rules join the allow rules and go to :attr:`save_rules` (a file
        tool's: the path's folder in ``workspace``, as the request showed).

        Returns the rules saved; raises ``OSError`` when the user's config cannot be written
        (the rules then still hold for this session).
        """
        rules = [r for r in rules_for(tool, arguments, workspace) if Rule.parse(r) not in self.allow]
        self.allow.extend(Rule.parse(r) for r in rules)
        self.kept.extend(Rule.parse(r) for r in rules)
        if rules and self.save_rules is not None:
            self.save_rules(rules)
        return rules

    def forget_rule(self, rule: str) -> None:
        """Drop an allow rule from this session (the caller removes it from the config file)."""
        parsed = Rule.parse(rule)
        self.allow = [r for r in self.allow if r != parsed]
        self.kept[:] = [r for r in self.kept if r != parsed]

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
