"""``monkey agent``: set up the agent from flags and config, run it, print the events."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.permissions.approval import ApprovalPolicy, Approver, HeadlessApprover, RuleError
from monkey.agent.budget import Limits
from monkey.session.switch import BackendSwitcher
from monkey.backends.base import Backend, BackendError
from monkey.config import Config, ConfigError, load_config, monkey_home
from monkey.events import CheckpointCreated, Event, TurnCompleted
from monkey.line.output import EXIT_CODES
from monkey.safe_text import escape_controls
from monkey.line.terminal import Terminal

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.mcp_client.config import Servers
    from monkey.tools.sandbox import Sandbox

__all__ = ["run_agent_command", "EXIT_CODES", "build_agent", "resolve_setup", "Setup", "changed_files", "where_line"]


class UsageError(Exception):
    """Bad flags, config or workspace: exit 2 with this message."""


@dataclass
class Setup:
    """Everything resolved and checked from flags and config; :meth:`build` makes the agent.

    Resolving is cheap (no loop, no tools, no checkpoint database), so the app can check
    every usage error before it draws, and build the agent just after its first frame.
    """

    workspace: Path
    config: Config
    backend: Backend
    policy: ApprovalPolicy
    approver: Approver | None
    max_iterations: int
    compact_at: float
    notices: list[str]
    switcher: BackendSwitcher
    """Builds other backends for ``/model`` and ``/backend`` the way this one was built."""
    agent: Agent | None = None
    """The agent, once :meth:`build` has run."""
    sandbox: Sandbox | None = None
    """The sandbox shell commands run in (None: none; then ``policy.sandboxed`` is False)."""
    mcp: McpSetup | None = None
    """The MCP servers configured, and which project servers the person refused."""
    limits: Limits = field(default_factory=Limits)
    """The run's budget: ``--max-turns`` ... over ``[budget]``."""

    def build(self, *, checkpoints: bool = True) -> tuple[Agent, list[str]]:
        """Build the agent (importing the loop and the tools now) and attach its checkpoint guard.

        Returns the agent and one message per interrupted change that the guard repaired.
        """
        from monkey.extensions.hooks import Hooks, parse_hooks
        from monkey.extensions.instructions import load_instructions
        from monkey.extensions.skills import discover
        from monkey.agent.loop import Agent, AgentOptions
        from monkey.config import monkey_home
        from monkey.tools.base import ShellSettings

        config = self.config
        instructions = load_instructions(self.workspace, home=monkey_home(), trusted=config.approvals.trust_project,
                                         names=tuple(config.instructions.files),
                                         max_bytes=config.instructions.max_bytes)
        self.notices += instructions.notices
        skills = discover(self.workspace, home=monkey_home(), trusted=config.approvals.trust_project)
        self.notices += skills.warnings
        try:
            hooks = Hooks(parse_hooks(config.hooks), self.workspace)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        options = AgentOptions(
            instructions=instructions,
            skills=skills,
            hooks=hooks,
            max_iterations=self.max_iterations,
            max_repeats=config.agent.max_repeats,
            limits=self.limits,
            shell=ShellSettings(
                timeout=config.shell.timeout,
                max_timeout=config.shell.max_timeout,
                output_limit=config.shell.output_limit,
                sandbox=self.sandbox,
            ),
        )
        guard, repaired = _checkpoint_guard(self.workspace, config) if checkpoints else (None, [])
        self.agent = Agent(backend=self.backend, workspace=self.workspace, approver=self.approver,
                           policy=self.policy, options=options, checkpoints=guard,
                           context=_context_manager(self.backend, config, self.compact_at))
        self.notices += _offer_subagents(self.agent, self.workspace, config, self.switcher)
        if self.mcp is not None and (self.mcp.servers.servers or self.mcp.servers.errors):
            from monkey.mcp_client.manager import McpManager

            self.agent.mcp = McpManager(self.mcp.servers, workspace=self.workspace, home=monkey_home(),  # type: ignore[assignment]
                                        registry=self.agent.tools, trusted_folder=config.approvals.trust_project,
                                        refused=self.mcp.refused, result_limit=config.mcp.result_limit)
            self.notices += self.agent.mcp.notices  # type: ignore[attr-defined]
        return self.agent, repaired


def _delegation(config: Config, defs=None):  # type: ignore[no-untyped-def]
    """The ``[subagents]`` limits as a :class:`~monkey.agent.subagents.Delegation` (raises UsageError)."""
    from monkey.agent.agent_defs import AgentDefs
    from monkey.agent.subagents import Delegation

    sub = config.subagents
    try:
        return Delegation(defs if defs is not None else AgentDefs(), max_depth=sub.max_depth,
                          max_parallel=sub.max_parallel, max_per_turn=sub.max_per_turn)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _offer_subagents(agent: Agent, workspace: Path, config: Config, switcher: BackendSwitcher) -> list[str]:
    """Give ``agent`` the ``task`` tool with the agents defined here; the warnings about definitions."""
    from monkey.agent.agent_defs import discover_agents
    from monkey.agent.subagents import install_task_tool

    defs = discover_agents(workspace, home=monkey_home(), trusted=config.approvals.trust_project)
    delegation = _delegation(config, defs)
    delegation.make_backend = switcher.create
    install_task_tool(agent, delegation)
    return defs.warnings


@dataclass
class McpSetup:
    """The MCP servers a session will start (see :mod:`monkey.mcp_client`)."""

    servers: Servers
    refused: dict[str, str]


def _mcp_setup(args: argparse.Namespace, workspace: Path, config: Config) -> McpSetup:
    """Read the MCP server definitions and ask about project servers not approved yet (on a terminal).

    Raises:
        UsageError: ``--mcp-config FILE`` cannot be read.
    """
    from monkey.mcp_client.config import McpConfigError, load_servers, parse_servers

    try:
        servers = load_servers(workspace, monkey_home(), flag_file=getattr(args, "mcp_config", None))
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None
    if editor := getattr(args, "editor_mcp_servers", None):  # monkey acp: the servers the editor names
        parse_servers(editor, origin="editor", source="the editor", into=servers)
    if not any(s.origin == "project" for s in servers.servers.values()):
        return McpSetup(servers, {})
    probe = Terminal.open()
    if probe is None:  # nobody to ask: unapproved project servers are not started, and it is said why
        return McpSetup(servers, {})
    probe.close()
    from monkey.mcp_client.manager import approve_project_servers

    refused = approve_project_servers(servers, workspace=workspace, home=monkey_home(),
                                      trusted_folder=config.approvals.trust_project, ask=_ask_server)
    return McpSetup(servers, refused)


def _ask_server(server) -> bool:  # type: ignore[no-untyped-def]  # ServerConfig
    """Ask on the terminal whether a project-defined MCP server may start (False: nobody to ask)."""
    terminal = Terminal.open()
    if terminal is None:
        return False
    try:
        terminal.discard_typed_ahead()
        terminal.write(
            f"monkey: {escape_controls(server.source, keep_newlines=False)} defines the MCP server "
            f"{escape_controls(server.name, keep_newlines=False)}:\n"
            f"  {escape_controls(server.describe(), keep_newlines=False)}\n"
            "It runs as you, outside the sandbox. Start it (asked again if its definition changes)? [y/N] ")
        return terminal.input.readline().strip().lower() in ("y", "yes")
    finally:
        terminal.close()


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    sys.stderr.flush()
    return code


def _workspace(cwd: str | None) -> Path:
    path = Path(cwd).expanduser() if cwd else Path.cwd()
    if not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    return path.resolve()


def make_policy(config: Config, args: argparse.Namespace) -> ApprovalPolicy:
    """The permission engine a session starts with: rules, the mode, and what it protects.

    Raises:
        UsageError: a bad rule, or a mode that contradicts ``--no-approval``.
    """
    from monkey.modes import ModeError, parse_mode
    from monkey.permissions.user_rules import add_rules

    try:
        flagged = parse_mode(args.mode) if getattr(args, "mode", None) else None
    except ModeError as exc:
        raise UsageError(str(exc)) from None
    if flagged not in (None, "auto") and args.no_approval:
        raise UsageError(f"--no-approval is --mode auto; it contradicts --mode {flagged}")
    mode = flagged or ("auto" if args.no_approval else None) or parse_mode(config.approvals.mode or "default")
    try:
        policy = ApprovalPolicy.from_strings(
            config.approvals.allow, config.approvals.deny, mode=mode,
            read_only=config.approvals.read_only, read_only_extra=config.approvals.read_only_extra,
        )
    except RuleError as exc:
        raise UsageError(str(exc)) from None
    policy.mode_pinned = bool(flagged or args.no_approval)  # resuming keeps the mode the command line chose
    home = monkey_home()
    policy.protected_roots = (home.resolve(),)

    def save(rules: list[str]) -> None:
        add_rules(home, rules)

    policy.save_rules = save
    return policy


def resolve_setup(args: argparse.Namespace, approver: Approver | None) -> Setup:
    """Resolve workspace, config, backend and approval rules; raise on any usage error.

    Raises:
        UsageError: bad flags, config, rules or workspace (exit 2).
        BackendError: the backend cannot be created.
    """
    from monkey.backends.select import choose_backend, create_backend

    workspace = _workspace(args.cwd)
    try:
        config = load_config(workspace)
        if config.untrusted and ask_to_trust(workspace, config.untrusted):
            config = load_config(workspace)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.continue_ and getattr(args, "resume", None) is not None:
        raise UsageError("--continue and --resume contradict each other; give one")
    compact_at = getattr(args, "compact_at", None) or config.context.compact_at
    if not 0 < compact_at <= 1:
        raise UsageError(f"context.compact_at must be a fraction between 0 and 1, got {compact_at}")
    from monkey.context.policies import POLICIES

    unknown = [p for p in config.context.policies if p not in POLICIES]
    if unknown:
        raise UsageError(f"context.policies: unknown {', '.join(map(repr, unknown))}; expected some of "
                         f"{', '.join(sorted(POLICIES))}")
    policy = make_policy(config, args)
    if config.hooks:
        from monkey.extensions.hooks import parse_hooks

        try:
            parse_hooks(config.hooks)  # a bad [hooks] table is a usage error now, not in the app later
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    from monkey.agent.subagent_limits import check_limits

    try:  # bad [subagents] limits are a usage error now (the loop is imported after the first frame)
        check_limits(config.subagents.max_depth, config.subagents.max_parallel, config.subagents.max_per_turn)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sandbox, sandbox_notice = _sandbox(config)
    policy.sandboxed = sandbox is not None
    choice = choose_backend(
        flag=args.backend, local=args.local, script=args.script, base_url=args.base_url,
        api_key=args.api_key, config=config,
    )
    backend = create_backend(choice.name, config=config, model=args.model, script=args.script,
                             api_key=args.api_key, base_url=args.base_url, workspace=workspace)
    switcher = BackendSwitcher(config, workspace, script=args.script, flagged=choice.name,
                               api_key=args.api_key, base_url=args.base_url)
    return Setup(workspace, config, backend, policy, approver,
                 max_iterations=args.max_iterations or config.agent.max_iterations,
                 compact_at=compact_at, notices=config.notices + choice.notices + sandbox_notice,
                 switcher=switcher, sandbox=sandbox, mcp=_mcp_setup(args, workspace, config),
                 limits=budget_limits(args, config))


def budget_limits(args: argparse.Namespace, config: Config) -> Limits:
    """The run's budget: each flag given over ``[budget]`` in config (``--budget-scope`` over ``scope``).

    Raises:
        UsageError: a negative or non-numeric limit in config.
    """
    from dataclasses import replace

    from monkey.agent.budget import BUDGETS, parse_limits, parse_scope

    values: dict[str, object] = {name: getattr(config.budget, name) for name in BUDGETS}
    for name in BUDGETS:
        flag = getattr(args, name, None)
        if flag is not None:
            values[name] = flag
    flag = getattr(args, "budget_scope", None)
    try:
        given = (flag, "--budget-scope") if flag is not None else (config.budget.scope, "[budget] scope")
        scope = parse_scope(*given)
        return replace(parse_limits(values, "[budget]"), scope=scope)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _sandbox(config: Config) -> tuple[Sandbox | None, list[str]]:
    """The sandbox ``[shell] sandbox`` gives here (probed once per process), and the line to say about it."""
    from monkey.config import monkey_home
    from monkey.tools.sandbox import probe

    found = probe(config.shell.sandbox, network=config.shell.sandbox_network, home=monkey_home().resolve())
    return found.sandbox, [found.notice] if found.notice else []


def ask_to_trust(workspace: Path, keys: list[str]) -> bool:
    """Ask on the terminal whether to trust ``workspace``'s ``.monkey/`` (never without one); True if trusted now."""
    from monkey.config import monkey_home
    from monkey.safe_text import escape_controls
    from monkey.line.terminal import Terminal
    from monkey.trust import trust

    terminal = Terminal.open()
    if terminal is None:  # headless: nobody to ask, the folder stays untrusted
        return False
    try:
        terminal.discard_typed_ahead()
        shown = escape_controls(str(workspace), keep_newlines=False)
        terminal.write(
            f"monkey: {shown}/.monkey/config.toml sets {escape_controls(', '.join(keys), keep_newlines=False)}.\n"
            "Trusted, a folder's .monkey/ may choose the backend, the model, limits and approvals.\n"
            f"Trust {shown}? [y/N] ")
        answer = terminal.input.readline().strip().lower()
        if answer not in ("y", "yes"):
            terminal.write("monkey: not trusted; its deny rules and [ui] apply, the rest is ignored\n")
            return False
        try:
            trust(workspace, monkey_home())
        except OSError as exc:
            terminal.write(f"monkey: cannot remember the trust: {exc.strerror or exc}\n")
            return False
        return True
    finally:
        terminal.close()


def build_agent(args: argparse.Namespace, approver: Approver | None) -> Setup:
    """:func:`resolve_setup`, then :meth:`Setup.build`: the agent with its checkpoint guard.

    The checkpoint repair's messages are added to :attr:`Setup.notices`.
    """
    setup = resolve_setup(args, approver)
    _, repaired = setup.build()
    setup.notices += repaired
    return setup


def _checkpoint_guard(workspace: Path, config: Config):  # type: ignore[no-untyped-def]
    """The workspace's checkpoint guard, and one message per interrupted change it repaired."""
    from monkey.checkpoints.guard import CheckpointGuard
    from monkey.config import monkey_home
    from monkey.db import DatabaseError, os_error_text

    guard = CheckpointGuard(workspace, home=monkey_home(), max_file_size=config.checkpoints.max_file_size)
    try:
        return guard, guard.repair()
    except DatabaseError as exc:
        return guard, [f"checkpoints cannot be used, so every change will be refused: {exc}"]
    except OSError as exc:  # a full or read-only monkey home
        return guard, [f"checkpoints cannot be used, so every change will be refused: {os_error_text(exc, workspace)}"]


def _context_manager(backend: Backend, config: Config, compact_at: float):  # type: ignore[no-untyped-def]
    """Counting, eliding and compaction settings from ``[context]`` and ``--compact-at``."""
    from monkey.context.window import ContextManager, ContextSettings
    from monkey.context.policies import PolicySettings

    c = config.context
    settings = ContextSettings(window=c.window, compact_at=compact_at, keep_tool_results=c.keep_tool_results,
                               policies=tuple(dict.fromkeys(c.policies)),
                               policy=PolicySettings(keep=c.keep_tool_calls, max_tokens=c.keep_tool_tokens,
                                                     step=c.policy_step))
    return ContextManager(backend, settings=settings)


def _interactive_terminal() -> bool:
    return sys.stdin.isatty() and (sys.stdout.isatty() or sys.stderr.isatty())


def _make_sink(fmt: str):  # type: ignore[no-untyped-def]
    from monkey.line import output

    if fmt == "stream-json":
        return output.StdoutGuard(output.StreamJsonSink(sys.stdout.buffer))
    if fmt == "json":
        return output.StdoutGuard(output.JsonSink(sys.stdout))
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    # the error that ends a task is said once, in the reason line on stderr
    return output.StdoutGuard(output.TextSink(sys.stdout, color=color, show_fatal_errors=False))


async def _drive(agent: Agent, task: str, sink, *, continue_: bool = False,  # type: ignore[no-untyped-def]
                 resume: str | None = None, checkpoints: list[str] | None = None,
                 workflow=None) -> TurnCompleted | None:
    """Run one task, cancelling cleanly on the first Ctrl-C and giving up on the second.

    Every event goes to the session store, then to ``sink``: all but the streaming deltas are
    committed before they are shown (:meth:`~monkey.store.Recorder.keep`). A sink that returns False
    cannot show anything more (see :class:`~monkey.line.output.StdoutGuard`): the task is
    cancelled. The ids of the checkpoints the run took are appended to ``checkpoints``.
    ``workflow``: makes the :class:`~monkey.workflow.runner.Workflow` to run instead of one turn.
    """
    from monkey.session.stored import open_session

    try:
        session = await open_session(agent, continue_=continue_, resume=resume)
    except BaseException:
        await agent.backend.aclose()
        raise
    for notice in session.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    recorder = session.recorder
    loop = asyncio.get_running_loop()
    presses = 0
    main = asyncio.current_task()

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1 and agent.cancel():
            sys.stderr.write("\nmonkey: cancelling (Ctrl-C again to quit at once)\n")
            sys.stderr.flush()
        elif main is not None:
            main.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_sigint)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):
            pass
    last: TurnCompleted | None = None
    mcp = getattr(agent, "mcp", None)
    try:
        if mcp is not None:  # a headless task waits for its MCP servers before the first model call
            await mcp.wait_ready()
            for view in mcp.views():
                if view.status == "failed":
                    sys.stderr.write(escape_controls(f"monkey: MCP server {view.name} failed: {view.error}\n"))
        events = workflow(agent).run_task() if workflow is not None else agent.run_task(task)
        async for event in events:
            if isinstance(event, TurnCompleted):
                last = event
            elif isinstance(event, CheckpointCreated) and checkpoints is not None:
                checkpoints.append(event.checkpoint_id)
            ready = [event]
            if recorder.failed is None:
                ready = await recorder.keep(event, more=agent.backlog > 0)  # durable before visible
                if recorder.failed is not None:
                    sys.stderr.write(f"\nmonkey: {recorder.failed}; stopping the turn (what was saved is kept)\n")
                    sys.stderr.flush()
                    agent.cancel()
            for shown in ready:
                if sink(shown) is False:  # the reader of stdout went away (| head): stop, keep what is stored
                    agent.cancel()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        if mcp is not None:
            await mcp.aclose()
        try:
            await agent.backend.aclose()
        finally:
            await session.close()
    if recorder.failed is not None:
        raise recorder.failed
    return last


def changed_files(agent: Agent, checkpoint_ids: list[str]) -> list[str]:
    """The workspace paths the run's own changes touched, in order, from the checkpoint journal.

    Only changes that happened count (state ``applied``): a refused, failed or no-op call
    leaves its checkpoint in another state, and an undone one was put back.
    """
    guard = agent.checkpoints
    if guard is None or not checkpoint_ids:
        return []
    paths: dict[str, None] = {}
    try:
        for cid in dict.fromkeys(checkpoint_ids):
            entry = guard.journal.get(cid)
            if entry is not None and entry.state == "applied":
                paths.update(dict.fromkeys(entry.paths))
    except Exception:  # noqa: BLE001 - a damaged journal: say nothing rather than guess
        return []
    return list(paths)


def where_line(workspace: Path, changed: list[str]) -> str:
    """``worked in WORKSPACE; changed a.py, b.py`` (or ``; no files changed``)."""
    if not changed:
        return f"worked in {workspace}; no files changed"
    shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
    return f"worked in {workspace}; changed {shown}"


def _pick(workspace: Path, *, interactive: bool, app: bool, inline: bool) -> str:
    """``--resume`` without an id: the app's session picker when the app is used, else a line picker.

    Raises:
        StoreError: no sessions here, nobody to ask, or none chosen.
    """
    from monkey.commands.pick import pick_session
    from monkey.session.stored import recent_sessions
    from monkey.store import StoreError

    if not app:
        return pick_session(workspace, interactive=interactive)
    if not recent_sessions(workspace, 1):  # said on the command line, before anything draws
        raise StoreError(f"no sessions in {workspace} to resume")
    from monkey.ui.pick import pick_in_app

    chosen = pick_in_app(workspace, inline=inline)
    if not chosen:
        raise StoreError("no session chosen")
    return chosen


def _read_task(args: argparse.Namespace) -> str | None:
    if args.task is not None:
        return args.task
    if not sys.stdin.isatty():
        return sys.stdin.read()
    return None


def run_agent_command(args: argparse.Namespace) -> int:
    """Run ``monkey agent`` and return the exit status."""
    task = _read_task(args)
    if task is not None and not task.strip():
        return _fail("the task is empty", 2)
    if getattr(args, "workflow", None):
        from monkey.workflow import WORKFLOWS

        if args.workflow not in WORKFLOWS:
            return _fail(f"unknown workflow {args.workflow!r}: expected one of {', '.join(WORKFLOWS)}", 2)
        if task is None:
            return _fail(f"--workflow needs --task (in the app or --plain: /workflow {args.workflow} TASK)", 2)
    interactive = _interactive_terminal()
    use_app = interactive and not getattr(args, "plain", False) and (
        task is None or getattr(args, "tui", False))
    approver: Approver
    if use_app:
        from monkey.ui.approver import TuiApprover

        approver = TuiApprover()
    elif (terminal := Terminal.open()) is not None:
        from monkey.line.repl import InlineApprover

        approver = InlineApprover(terminal)
    else:  # nobody can answer: the rules and the headless policy decide
        approver = HeadlessApprover(approve_plan=getattr(args, "approve_plan", None) or "")
    try:
        setup = resolve_setup(args, approver) if use_app else build_agent(args, approver)
    except UsageError as exc:
        return _fail(str(exc), 2)
    except BackendError as exc:
        return _fail(exc.message, 2 if exc.kind == "invalid_request" else 1)
    for notice in setup.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    resume = getattr(args, "resume", None)
    if resume == "":
        from monkey.store import StoreError

        try:
            resume = _pick(setup.workspace, interactive=interactive, app=use_app, inline=getattr(args, "inline", False))
        except StoreError as exc:
            return _fail(str(exc), 2)
    if use_app:
        from monkey.ui.run import run_app

        if args.continue_ or resume:  # the store is imported and opened only to find a session
            from monkey.session.stored import session_to_open
            from monkey.store import StoreError

            try:  # a session that is not there fails here, as with --task, before the app draws
                resume = session_to_open(setup.workspace, continue_=args.continue_, resume=resume)
            except StoreError as exc:
                return _fail(str(exc), 1)
        if getattr(args, "workflow", None):  # --tui: the app runs it as /workflow does
            task = f"/workflow {args.workflow} {task}"
        return run_app(setup, task=task, continue_=False, resume=resume,
                       notices=setup.notices, inline=getattr(args, "inline", False))
    assert setup.agent is not None
    if task is None:
        from monkey.line.repl import run_repl

        return run_repl(setup.agent, continue_=args.continue_, resume=resume, switcher=setup.switcher)
    from monkey.line import output
    from monkey.store import StoreError

    sink = _make_sink(args.output_format)
    taken: list[str] = []
    made = []

    def workflow(agent: Agent):  # type: ignore[no-untyped-def]
        from monkey.config import monkey_home
        from monkey.workflow.runner import Workflow

        made.append(Workflow(agent, task, settings=setup.config.workflow, home=monkey_home()))
        sys.stderr.write(f"monkey: workflow {made[0].id} (monkey workflows show {made[0].id})\n")
        return made[0]

    try:
        last = asyncio.run(_drive(setup.agent, task, sink, continue_=args.continue_, resume=resume,
                                  checkpoints=taken, workflow=workflow if getattr(args, "workflow", None) else None))
    except (KeyboardInterrupt, asyncio.CancelledError):
        sink.close()
        return output.EXIT_PIPE_CLOSED if sink.closed else _fail("interrupted", 130)
    except StoreError as exc:
        sink.close()
        return _fail(str(exc), 1)
    changed = changed_files(setup.agent, taken)
    if isinstance(getattr(sink.sink, "extra", None), dict):  # the json object names them too
        sink.sink.extra.update(workspace=str(setup.workspace), changed=changed)
    sink.close()
    if sink.closed:  # quietly, like any program whose reader went away; the session is stored
        return output.EXIT_PIPE_CLOSED
    if args.output_format == "text":
        sys.stderr.write(escape_controls(f"monkey: {where_line(setup.workspace, changed)}\n"))
        sys.stderr.flush()
    if made:  # a workflow: its outcome says how it ended
        flow = made[0]
        if flow.exit_code:
            return _fail(f"workflow {flow.id} ended: {flow.outcome}" + (f" ({flow.reason})" if flow.reason else ""),
                         flow.exit_code)
        sys.stderr.write(escape_controls(f"monkey: workflow {flow.id} done: {flow.reason}\n"))
        return 0
    if last is None:
        return _fail("the task ended without a result", 1)
    code = EXIT_CODES.get(last.reason, 1)
    if code:
        _fail(last.message or last.reason, code)
    return code
