"""One way to start a session: a typed :class:`SessionRequest` in, a checked :class:`Setup` out.

Every front end starts its sessions here — the app, the line REPL and ``--task`` (from the
command line's flags), ACP (a request per editor session, the editor naming the workspace
and its MCP servers) and ``monkey serve`` (one request for the server's life). The
questions only a person can answer (trust this folder's ``.monkey/``? may this project MCP
server start?) are passed in as functions (:class:`Questions`): the terminal asks them in
line mode, nobody asks them headless.

:func:`resolve_setup` is cheap (no loop, no tools, no checkpoint database; the sandbox is
probed in a thread; the permission engine is imported only to read the rules the config
gives, else when :attr:`Setup.policy` is first used), so the app can find every usage error
before it draws and build the agent (:meth:`Setup.build`) just after its first frame;
:func:`build_agent` does both at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monkey.agent.budget import Limits
from monkey.backends.base import Backend
from monkey.config import Config, ConfigError, load_config, monkey_home
from monkey.session.setup_parts import checkpoint_guard, context_manager, guarded_for, holds, probe_sandbox
from monkey.session.switch import BackendSwitcher, offer_mcp

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.permissions.policy import ApprovalPolicy
    from monkey.permissions.requests import Approver
    from monkey.events import Event
    from monkey.mcp_client.config import ServerConfig, Servers
    from monkey.modes import Mode
    from monkey.session.replies import Level
    from monkey.session.session import Session
    from monkey.tools.sandbox import PendingProbe, Sandbox

__all__ = [
    "SessionRequest",
    "Questions",
    "Setup",
    "SetupError",
    "McpSetup",
    "resolve_setup",
    "build_agent",
    "make_policy",
    "start_mode",
    "guarded_for",
    "budget_limits",
    "WATCH_NOTICE",
]


class SetupError(Exception):
    """A bad request, config or workspace: the front end says it (the command line exits 2)."""


@dataclass(frozen=True)
class SessionRequest:
    """What a front end asks for: the workspace, the backend and model, the mode, the budgets.

    ``None`` leaves a setting to the workspace's config (and its defaults).
    """

    workspace: Path | None = None
    """The folder monkey works in (None: the current directory)."""
    backend: str | None = None
    """``anthropic``, ``openai``, ``local``, ``scripted``, ``claude-code``, ``codex``, ``plugin:NAME``."""
    model: str | None = None
    local: bool = False
    """The embedded local model, no network (``--local``)."""
    base_url: str | None = None
    api_key: str | None = None
    script: str | None = None
    """What the scripted backend replays."""
    mode: str | None = None
    """The permission mode to start in (``--mode``), pinned over the one a resumed session was left in."""
    no_approval: bool = False
    """``--no-approval``: the auto mode (protected paths still need a person)."""
    approve_plan: str = ""
    """With nobody to ask: approve a plan and go on in this mode (``default``, ``accept-edits``); '': record it."""
    max_iterations: int | None = None
    compact_at: float | None = None
    """Compact when the conversation fills this fraction of the context window."""
    budgets: Mapping[str, float | int | None] = field(default_factory=dict)
    """``max_turns``, ``max_budget_usd``, ``max_tokens``, ``max_wall`` given over ``[budget]``."""
    budget_scope: str | None = None
    """``session`` or ``run`` over ``[budget] scope``."""
    mcp_config: str | None = None
    """A JSON file of more MCP servers (``--mcp-config``)."""
    editor_mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    """MCP servers an editor names (``mcpServers`` shape): started without asking."""
    continue_: bool = False
    """Open the workspace's latest session."""
    resume: str | None = None
    """Open this stored session ('': the front end lets the person pick one)."""

    def but(self, **changes: Any) -> SessionRequest:
        """This request with ``changes`` (an editor's workspace, its MCP servers ...)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Questions:
    """The questions only a person can answer, asked by the front end (None: nobody to ask)."""

    trust: Callable[[Path, list[str]], bool] | None = None
    """Trust the workspace's ``.monkey/`` (it sets these keys)? True once trusted. None: it stays untrusted."""
    mcp_server: Callable[[ServerConfig], bool] | None = None
    """May this project MCP server start? None: unapproved project servers do not start, and say why."""


@dataclass
class McpSetup:
    """The MCP servers a session will start (see :mod:`monkey.mcp_client`)."""

    servers: Servers
    refused: dict[str, str]


@dataclass
class Setup:
    """Everything resolved and checked from a request and config; :meth:`build` makes the agent."""

    workspace: Path
    config: Config
    backend: Backend
    approver: Approver | None
    max_iterations: int
    compact_at: float
    notices: list[str]
    switcher: BackendSwitcher
    """Builds other backends for ``/model`` and ``/backend`` the way this one was built."""
    agent: Agent | None = None
    """The agent, once :meth:`build` has run."""
    sandbox: Sandbox | None = None
    """The sandbox shell commands run in (None: none; then ``policy.sandboxed`` is False), once
    :meth:`build` has waited for the probe."""
    probing: PendingProbe | None = None
    """The sandbox probe :func:`resolve_setup` began in a thread (``bwrap`` takes a while: the app
    draws meanwhile); :meth:`build` waits for it."""
    mcp: McpSetup | None = None
    """The MCP servers configured, and which project servers the person refused."""
    limits: Limits = field(default_factory=Limits)
    """The run's budget: the request's budgets over ``[budget]``."""
    request: SessionRequest = field(default_factory=SessionRequest)
    """What was asked for (which session to open, among the rest)."""
    alerts: list[str] = field(default_factory=list)
    """Notices a person must read even where notices are only logged (an editor shows them as a message):
    a workspace that holds their home or ``/``."""
    monitor: str = ""
    """The web monitor served beside this session (``--web``: ``http://127.0.0.1:PORT``; "": none),
    which notifications link to."""
    made_policy: ApprovalPolicy | None = field(default=None, repr=False)
    """The permission engine once made (see :attr:`policy`)."""

    @property
    def policy(self) -> ApprovalPolicy:
        """The permission engine the session starts with (:func:`make_policy`), made on first use:
        :func:`resolve_setup` has checked the flags' mode and read the config's rules by then,
        so making it raises nothing new."""
        if self.made_policy is None:
            self.made_policy = make_policy(self.config, self.request.but(workspace=self.workspace))
        return self.made_policy

    @property
    def mode(self) -> str:
        """The permission mode the session starts in (known without making the engine)."""
        return self.made_policy.mode if self.made_policy is not None else start_mode(self.config, self.request)[0]

    def build(self, *, checkpoints: bool = True) -> tuple[Agent, list[str]]:
        """Build the agent (importing the loop and the tools now) and attach its checkpoint guard.

        Returns the agent and what building found to say, also added to :attr:`notices`: the
        sandbox's line, the instruction files', skills' and agent definitions' warnings, the MCP
        servers' notices, and one message per interrupted change that the guard repaired.
        """
        from monkey.agent.loop import Agent, AgentOptions
        from monkey.extensions.hooks import Hooks, parse_hooks
        from monkey.extensions.instructions import load_instructions
        from monkey.extensions.skills import discover
        from monkey.tools.base import ShellSettings

        config = self.config
        found: list[str] = []
        if self.probing is not None:
            probed, self.probing = self.probing.result(), None
            policy = self.policy
            self.sandbox = (
                probed.sandbox
                if probed.sandbox is None
                else replace(probed.sandbox, keep=lambda ws: policy.guarded.sandbox_paths(ws))
            )  # config or code monkey runs
            self.policy.sandboxed = probed.sandbox is not None
            found += [probed.notice] if probed.notice else []
        instructions = load_instructions(
            self.workspace,
            home=monkey_home(),
            trusted=config.approvals.trust_project,
            names=tuple(config.instructions.files),
            max_bytes=config.instructions.max_bytes,
        )
        found += instructions.notices
        read = {f.path.resolve() for f in instructions.files}  # the files their @imports name are instructions too
        self.policy.guarded = replace(self.policy.guarded, scripts=self.policy.guarded.scripts | read)
        if not config.approvals.trust_project:
            from monkey.session.untrusted import untrusted_notice, unused_here

            unused = unused_here(self.workspace, instructions=instructions.not_read, config_keys=config.untrusted)
            if unused:
                found.append(untrusted_notice(self.workspace, unused))
        skills = discover(self.workspace, home=monkey_home(), trusted=config.approvals.trust_project)
        found += skills.warnings
        try:
            trusted_outside = config.shell.trusted_commands == "outside"  # the user's own file says so, or not
            hooks = Hooks(parse_hooks(config.hooks), self.workspace, sandbox=None if trusted_outside else self.sandbox)
        except ValueError as exc:
            raise SetupError(str(exc)) from None
        shell = ShellSettings(
            timeout=config.shell.timeout,
            max_timeout=config.shell.max_timeout,
            output_limit=config.shell.output_limit,
            sandbox=self.sandbox,
            trusted_outside=trusted_outside,
        )
        options = AgentOptions(
            instructions=instructions,
            skills=skills,
            hooks=hooks,
            max_iterations=self.max_iterations,
            max_repeats=config.agent.max_repeats,
            limits=self.limits,
            shell=shell,
            diagnostics=_language_servers(self.workspace, config),
        )
        guard, repaired = checkpoint_guard(self.workspace, config) if checkpoints else (None, [])
        self.agent = Agent(
            backend=self.backend,
            workspace=self.workspace,
            approver=self.approver,
            policy=self.policy,
            options=options,
            checkpoints=guard,
            context=context_manager(self.backend, config, self.compact_at),
        )
        found += _offer_subagents(self.agent, self.workspace, config, self.switcher)
        if self.mcp is not None and (self.mcp.servers.servers or self.mcp.servers.errors):
            from monkey.mcp_client.manager import McpManager

            self.agent.mcp = McpManager(
                self.mcp.servers,
                workspace=self.workspace,
                home=monkey_home(),  # type: ignore[assignment]
                registry=self.agent.tools,
                trusted_folder=config.approvals.trust_project,
                refused=self.mcp.refused,
                result_limit=config.mcp.result_limit,
            )
            found += self.agent.mcp.notices  # type: ignore[attr-defined]
            offer_mcp(self.backend, self.agent.mcp)
        found += repaired
        self.notices += found
        return self.agent, found

    def watch_notice(self) -> str:
        """What a person at the app or the REPL is told once when the write watch cannot run
        (:data:`WATCH_NOTICE`), or "" (it runs, or nothing is checkpointed)."""
        guard = self.agent.checkpoints if self.agent is not None else None
        why = guard.watch_missing() if guard is not None else ""
        return WATCH_NOTICE.format(why=why) if why else ""

    def session(self, *, show: Callable[[Event], object], tell: Callable[[str, Level], None], **kw: Any) -> Session:
        """The :class:`~monkey.session.session.Session` of the built agent, rendered by ``show`` and ``tell``."""
        from monkey.session.session import Session

        if self.agent is None:
            raise RuntimeError("build the agent first (Setup.build)")
        return Session(self.agent, self.switcher, show=show, tell=tell, **kw)


def resolve_setup(request: SessionRequest, approver: Approver | None, questions: Questions = Questions()) -> Setup:
    """Resolve workspace, config, backend and approval rules; raise on any usage error.

    Raises:
        SetupError: a bad request, config, rules or workspace.
        BackendError: the backend cannot be created.
    """
    from monkey.backends.select import choose_backend, create_backend
    from monkey.context.policies import POLICIES

    workspace = _workspace(request.workspace)
    try:
        config = load_config(workspace)
        if config.untrusted and questions.trust is not None and questions.trust(workspace, config.untrusted):
            config = load_config(workspace)
    except ConfigError as exc:
        raise SetupError(str(exc)) from None
    if request.continue_ and request.resume is not None:
        raise SetupError("--continue and --resume contradict each other; give one")
    compact_at = request.compact_at or config.context.compact_at
    if not 0 < compact_at <= 1:
        raise SetupError(f"context.compact_at must be a fraction between 0 and 1, got {compact_at}")
    unknown = [p for p in config.context.policies if p not in POLICIES]
    if unknown:
        raise SetupError(
            f"context.policies: unknown {', '.join(map(repr, unknown))}; expected some of {', '.join(sorted(POLICIES))}"
        )
    approvals = config.approvals  # a bad --mode, and a bad rule, are usage errors now
    rules = approvals.allow or approvals.deny or approvals.read_only_extra  # none: the engine is made later
    policy = make_policy(config, request) if rules else None
    start_mode(config, request)
    if config.hooks:
        from monkey.extensions.hooks import parse_hooks

        try:
            parse_hooks(config.hooks)  # a bad [hooks] table is a usage error now, not in the app later
        except ValueError as exc:
            raise SetupError(str(exc)) from None
    from monkey.agent.subagent_limits import check_limits

    try:  # bad [subagents] limits are a usage error now (the loop is imported after the app's first frame)
        check_limits(config.subagents.max_depth, config.subagents.max_parallel, config.subagents.max_per_turn)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    alerts: list[str] = []
    home, system = holds(workspace)
    if home is not None or system:
        held = "/ (the whole system)" if system else f"your home folder {home}"
        alerts.append(
            f"the workspace {workspace} holds {held}: your home's dotfiles (shell rc files, .ssh/, "
            ".gitconfig, .config/, .local/ ...) and the system's folders stay protected, so changing "
            "one needs your approval of that exact call"
        )
    r = request
    choice = choose_backend(
        flag=r.backend, local=r.local, script=r.script, base_url=r.base_url, api_key=r.api_key, config=config
    )
    backend = create_backend(
        choice.name,
        config=config,
        model=r.model,
        script=r.script,
        api_key=r.api_key,
        base_url=r.base_url,
        workspace=workspace,
    )
    switcher = BackendSwitcher(
        config, workspace, script=r.script, flagged=choice.name, api_key=r.api_key, base_url=r.base_url
    )
    limits = budget_limits(request, config)
    mcp = _mcp_setup(request, workspace, config, questions)
    setup = Setup(
        workspace,
        config,
        backend,
        approver,
        max_iterations=r.max_iterations or config.agent.max_iterations,
        compact_at=compact_at,
        notices=config.notices + choice.notices + alerts,
        switcher=switcher,
        mcp=mcp,
        limits=limits,
        request=request,
        alerts=alerts,
        made_policy=policy,
    )
    setup.probing = probe_sandbox(config)  # every usage error is found by now
    return setup


WATCH_NOTICE = (
    "undo cannot tell your edits from a command's here ({why}): a file you change in the workspace "
    "while a shell command runs counts as the command's change, and undoing the command reverts it"
)
"""Said once by the app and the REPL when the write watch cannot run (see ``Setup.watch_notice``)."""


def build_agent(request: SessionRequest, approver: Approver | None, questions: Questions = Questions()) -> Setup:
    """:func:`resolve_setup`, then :meth:`Setup.build`: the agent with its checkpoint guard.

    What building found to say (the checkpoint repair's messages too) is in :attr:`Setup.notices`.
    """
    from monkey.db import db_path, empty_notice

    setup = resolve_setup(request, approver, questions)
    setup.notices += empty_notice(db_path(monkey_home()))  # before anything opens (and so fills) it
    setup.build()
    return setup


def make_policy(config: Config, request: SessionRequest) -> ApprovalPolicy:
    """The permission engine a session starts with: rules, the mode, and what it protects.

    Raises:
        SetupError: a bad rule, or a mode that contradicts ``--no-approval``.
    """
    from monkey.permissions.policy import ApprovalPolicy
    from monkey.permissions.rules import RuleError
    from monkey.permissions.user_rules import add_rules

    mode, flagged = start_mode(config, request)
    try:
        policy = ApprovalPolicy.from_strings(
            config.approvals.allow,
            config.approvals.deny,
            mode=mode,
            read_only=config.approvals.read_only,
            read_only_extra=config.approvals.read_only_extra,
        )
    except RuleError as exc:
        raise SetupError(str(exc)) from None
    policy.mode_pinned = bool(flagged or request.no_approval)  # resuming keeps the mode the request chose
    home = monkey_home()
    policy.protected_roots = (home.resolve(),)
    policy.guarded = guarded_for(config, _workspace(request.workspace))

    def save(rules: list[str]) -> None:
        add_rules(home, rules)

    policy.save_rules = save
    return policy


def start_mode(config: Config, request: SessionRequest) -> tuple[Mode, Mode | None]:
    """The permission mode a session starts in, and the one the request's flags pin (None: not pinned).

    Raises:
        SetupError: a bad ``--mode``, or one that contradicts ``--no-approval``.
    """
    from monkey.modes import ModeError, parse_mode

    try:
        flagged = parse_mode(request.mode) if request.mode else None
    except ModeError as exc:
        raise SetupError(str(exc)) from None
    if flagged not in (None, "auto") and request.no_approval:
        raise SetupError(f"--no-approval is --mode auto; it contradicts --mode {flagged}")
    mode = flagged or ("auto" if request.no_approval else None) or parse_mode(config.approvals.mode or "default")
    return mode, flagged


def budget_limits(request: SessionRequest, config: Config) -> Limits:
    """The run's budget: each one the request gives over ``[budget]`` (its scope over ``scope``).

    Raises:
        SetupError: a negative or non-numeric limit in config, or an unknown scope.
    """
    from monkey.agent.budget import BUDGETS, parse_limits, parse_scope

    values: dict[str, object] = {name: getattr(config.budget, name) for name in BUDGETS}
    values.update({name: value for name, value in request.budgets.items() if name in BUDGETS and value is not None})
    try:
        given = (
            (request.budget_scope, "--budget-scope")
            if request.budget_scope is not None
            else (config.budget.scope, "[budget] scope")
        )
        return replace(parse_limits(values, "[budget]"), scope=parse_scope(*given))
    except ValueError as exc:
        raise SetupError(str(exc)) from None


def _workspace(path: Path | None) -> Path:
    path = Path(path).expanduser() if path else Path.cwd()
    if not path.is_dir():
        raise SetupError(f"workspace {path} is not a directory")
    return path.resolve()


def _delegation(config: Config, defs=None):
    """The ``[subagents]`` limits as a :class:`~monkey.agent.subagents.Delegation` (raises SetupError)."""
    from monkey.agent.agent_defs import AgentDefs
    from monkey.agent.subagents import Delegation

    sub = config.subagents
    try:
        return Delegation(
            defs if defs is not None else AgentDefs(),
            max_depth=sub.max_depth,
            max_parallel=sub.max_parallel,
            max_per_turn=sub.max_per_turn,
        )
    except ValueError as exc:
        raise SetupError(str(exc)) from None


def _offer_subagents(agent: Agent, workspace: Path, config: Config, switcher: BackendSwitcher) -> list[str]:
    """Give ``agent`` the ``task`` tool with the agents defined here; the warnings about definitions."""
    from monkey.agent.agent_defs import discover_agents
    from monkey.agent.subagents import install_task_tool

    defs = discover_agents(workspace, home=monkey_home(), trusted=config.approvals.trust_project)
    delegation = _delegation(config, defs)
    delegation.make_backend = switcher.create
    install_task_tool(agent, delegation)
    return defs.warnings


def _mcp_setup(request: SessionRequest, workspace: Path, config: Config, questions: Questions) -> McpSetup:
    """Read the MCP server definitions and ask about project servers not approved yet (when someone can answer).

    Raises:
        SetupError: the request's MCP config file cannot be read.
    """
    from monkey.mcp_client.config import McpConfigError, load_servers, parse_servers

    try:
        servers = load_servers(workspace, monkey_home(), flag_file=request.mcp_config)
    except McpConfigError as exc:
        raise SetupError(str(exc)) from None
    if request.editor_mcp_servers:  # the servers the person's editor names
        parse_servers(dict(request.editor_mcp_servers), origin="editor", source="the editor", into=servers)
    ask = questions.mcp_server
    if ask is None or not any(s.origin == "project" for s in servers.servers.values()):
        return McpSetup(servers, {})  # nobody to ask: unapproved project servers are not started, and it is said why
    from monkey.mcp_client.manager import approve_project_servers

    refused = approve_project_servers(
        servers, workspace=workspace, home=monkey_home(), trusted_folder=config.approvals.trust_project, ask=ask
    )
    return McpSetup(servers, refused)


def _language_servers(workspace: Path, config: Config):
    """The session's language servers from ``[lsp.NAME]`` and the installed built-ins (None: none);
    none starts before the first edit of one of its files."""
    from monkey.lsp.diagnostics import Diagnostics
    from monkey.lsp.servers import LspError, servers

    try:
        specs = servers(config.lsp)
    except LspError as exc:
        raise SetupError(str(exc)) from None
    return Diagnostics(workspace, specs) if specs else None
