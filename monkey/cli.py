"""The ``monkey`` command line. Imports stay light here: work modules load on demand."""

from __future__ import annotations

import sys

__all__ = ["main", "run_command", "build_parser", "undumpable"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def undumpable() -> bool:
    """Close monkey's ``/proc/<pid>/environ``, ``/fd`` and memory to its children (Linux).

    ``prctl(PR_SET_DUMPABLE, 0)``: a process of the same user may no longer read them or
    attach to monkey (root's children still can: the sandbox's PID namespace hides monkey
    from those). Children start dumpable again. Returns whether it was done.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


def _fraction(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction above 0 and at most 1, got {value}")
    return value


def _sessions_parser(sub) -> None:
    sessions = sub.add_parser(
        "sessions",
        help="list, show, search, rename, fork, export and delete stored sessions",
        description="Stored sessions (in the monkey home's database).",
    )
    ssub = sessions.add_subparsers(dest="sessions_command", metavar="ACTION")
    sessions.set_defaults(_commands=ssub.choices)
    ls = ssub.add_parser("list", help="sessions of this workspace, newest first")
    ls.add_argument("--all", action="store_true", help="sessions of every workspace")
    ls.add_argument("--json", action="store_true", help="one JSON array")
    ls.add_argument("--cwd", help="workspace directory (default: the current directory)")
    show = ssub.add_parser("show", help="a session's details, conversation and integrity")
    show.add_argument("id", help="session id (or a unique prefix)")
    export = ssub.add_parser(
        "export", help="a session's events as JSON lines, its conversation as markdown, or as a Claude Code session"
    )
    export.add_argument("id", help="session id (or a unique prefix)")
    export.add_argument(
        "--format",
        choices=("jsonl", "markdown", "claude"),
        default="jsonl",
        help="claude: write a Claude Code session file that `claude --resume UUID` continues",
    )
    export.add_argument(
        "--force",
        action="store_true",
        help="with --format claude: write a new session file when Claude Code has written to the last one",
    )
    rename = ssub.add_parser("rename", help="give a session a title of its own")
    rename.add_argument("id", help="session id (or a unique prefix)")
    rename.add_argument("title", nargs="+", help="the new title")
    search = ssub.add_parser(
        "search", help="find text in the stored sessions' prompts, answers, tool calls and results"
    )
    search.add_argument("text", nargs="+", help="words that must all be there")
    search.add_argument("--all", action="store_true", help="search every workspace's sessions")
    search.add_argument("--cwd", help="workspace directory (default: the current directory)")
    search.add_argument("--limit", type=int, default=20, help="how many places at most (default 20)")
    search.add_argument("--json", action="store_true", help="one JSON array")
    fork = ssub.add_parser("fork", help="a new session with the conversation up to a turn")
    fork.add_argument("id", help="session id (or a unique prefix)")
    fork.add_argument("--at", type=int, metavar="TURN", help="fork after this turn (default: the last one)")
    imp = ssub.add_parser("import", help="bring a Claude Code or Codex session into monkey")
    imp.add_argument("source", choices=("claude", "codex"), help="where the session comes from")
    imp.add_argument(
        "ref",
        metavar="ID|TITLE|PATH",
        help="claude: its session id, title or file; codex: its session id or rollout file",
    )
    rm = ssub.add_parser("rm", help="delete sessions")
    rm.add_argument("ids", nargs="+", metavar="ID", help="session id (or a unique prefix)")
    prune = ssub.add_parser("prune", help="delete sessions not used for a number of days")
    prune.add_argument("--older-than", type=float, required=True, metavar="DAYS")


def _acp_parser(sub) -> None:
    acp = sub.add_parser(
        "acp",
        help="serve editors over the Agent Client Protocol (stdio)",
        description="Run monkey as an Agent Client Protocol agent on stdin/stdout, for editors "
        "such as Zed or Neovim. The editor names the workspace of each session.",
    )
    acp.add_argument("-l", "--local", action="store_true", help="use the embedded local model (no network)")
    acp.add_argument(
        "--no-approval", action="store_true", help="start sessions in the auto mode (protected paths stay protected)"
    )
    _mode_flag(acp)
    _model_flags(acp, per="prompt")
    log_flags(acp)


def _mode_flag(parser) -> None:
    parser.add_argument(
        "--mode",
        metavar="MODE",
        help="permission mode: default (ask), accept-edits (file changes run), plan (read-only), "
        "auto (nothing asks; protected paths still need a person)",
    )


def log_flags(parser) -> None:
    """``-v`` and ``--log-file`` (``monkey agent``, ``acp``, ``serve``)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log lines on stderr: -v what happens, -vv everything (not in the full-screen app)",
    )
    parser.add_argument("--log-file", metavar="PATH", help="log every record as a JSON line to PATH (rotated)")


def _logging(args) -> str:
    """Set up logging from the flags and the user's [logging]; a message when it cannot be."""
    from monkey.config import ConfigError, user_logging
    from monkey.logs import LogSetupError, configure

    try:
        conf = user_logging()
        app = args.command == "agent" and not args.plain and (args.task is None or args.tui) and sys.stdin.isatty()
        configure(
            verbose=args.verbose,
            file=args.log_file or conf.file,
            handlers=conf.handlers,
            max_bytes=conf.max_bytes,
            backups=conf.backups,
            stderr=not app,
        )
    except (ConfigError, LogSetupError) as exc:
        return str(exc)
    return ""


def _model_flags(parser, *, per: str) -> None:
    """The flags that choose the backend and model and bound the loop (``monkey agent``, ``monkey acp``)."""
    parser.add_argument("-m", "--model", help="model name, or a .gguf path for the local backend")
    parser.add_argument("--base-url", help="base URL of the model API")
    parser.add_argument("--api-key", help="API key (default: from the environment)")
    parser.add_argument(
        "--max-iterations", type=_positive_int, default=None, help=f"most model calls per {per} (default 20)"
    )
    parser.add_argument(
        "--backend",
        help="anthropic, openai (any OpenAI-compatible server), local, scripted, "
        "claude-code (the Claude Code CLI), codex (the Codex CLI), plugin:NAME (an agent plugin), "
        "acp:NAME (an ACP agent: gemini, qwen, opencode or [acp_agents.NAME])",
    )
    parser.add_argument("--script", help="script file for the scripted backend")
    parser.add_argument(
        "--max-turns",
        type=_positive_int,
        default=None,
        metavar="N",
        help="budget: most model responses in the session, sub-agents' included",
    )
    parser.add_argument(
        "--max-budget-usd",
        type=_positive_float,
        default=None,
        metavar="USD",
        help="budget: most US dollars the run may spend",
    )
    parser.add_argument(
        "--max-tokens",
        type=_positive_int,
        default=None,
        metavar="N",
        help="budget: most input + output tokens the run may use",
    )
    parser.add_argument(
        "--max-wall",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="budget: most seconds of turns (time between turns is not counted)",
    )
    parser.add_argument(
        "--budget-scope",
        default=None,
        metavar="session|run",
        help="what the budget counts: the whole session, earlier runs of a resumed one "
        "included (session, the default), or this run only (run)",
    )


def build_parser(only: str | None = None):
    """The argument parser of every subcommand (``only="agent"``: of ``monkey agent`` alone, which
    is all that command parses; the app's first frame does not wait for the others)."""
    import argparse

    from monkey import __version__

    parser = argparse.ArgumentParser(
        prog="monkey",
        description="An interactive terminal coding agent.",
    )
    parser.add_argument("--version", action="version", version=f"monkey {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(_commands=sub.choices)  # the command names, for "did you mean"

    agent = sub.add_parser(
        "agent",
        help="run the coding agent (a task with --task, else an interactive session)",
        description="Run the coding agent on a task, or interactively.",
    )
    agent.add_argument("-t", "--task", help="the task to complete; monkey exits when it is done")
    agent.add_argument("-l", "--local", action="store_true", help="use the embedded local model (no network)")
    agent.add_argument(
        "--no-approval",
        action="store_true",
        help="the same as --mode auto: run dangerous tools without asking (protected paths stay protected)",
    )
    _mode_flag(agent)
    agent.add_argument(
        "--approve-plan",
        choices=("default", "accept-edits"),
        metavar="MODE",
        help="with nobody to ask (piped --task): approve the model's plan and go on in MODE "
        "(default or accept-edits); without it a plan is only recorded",
    )
    agent.add_argument("--workflow", metavar="NAME", help="run --task as a workflow: tpdr (think, plan, do, reflect)")
    agent.add_argument(
        "-c", "--continue", dest="continue_", action="store_true", help="continue the latest session of this workspace"
    )
    agent.add_argument(
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="ID",
        help="resume a stored session (without ID: choose from the recent ones)",
    )
    agent.add_argument(
        "--compact-at",
        type=_fraction,
        default=None,
        metavar="FRACTION",
        help="compact the conversation when it fills this fraction of the context window (default 0.8)",
    )
    _model_flags(agent, per="task")
    agent.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="text (readable), json (one final object), stream-json (every event as a JSON line)",
    )
    agent.add_argument("--cwd", help="workspace directory (default: the current directory)")
    agent.add_argument(
        "--worktree",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="run the session in a new git worktree of the repository, .monkey/worktrees/NAME on a "
        "new branch monkey/NAME from HEAD (without NAME: one is made up)",
    )
    agent.add_argument("--plain", action="store_true", help="line-based interactive mode (no full-screen app)")
    agent.add_argument("--tui", action="store_true", help="run --task in the full-screen app")
    agent.add_argument(
        "--web",
        action="store_true",
        help="also serve the web monitor (monkey web) in this process; its link is shown once",
    )
    agent.add_argument(
        "--inline",
        action="store_true",
        help="run the app in a region below the prompt; the conversation stays in the scrollback when it closes",
    )
    log_flags(agent)
    agent.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers from a JSON file ({"mcpServers": {...}}, as Claude Code\'s .mcp.json)',
    )
    if only == "agent":
        return parser
    _sessions_parser(sub)
    _acp_parser(sub)
    from monkey.commands.serve import add_parser as add_serve_parser

    add_serve_parser(sub, _model_flags, _mode_flag)
    log_flags(sub.choices["serve"])
    from monkey.commands.web import add_parser as add_web_parser

    add_web_parser(sub)
    from monkey.commands.workflows import add_parser as add_workflows_parser

    add_workflows_parser(sub)
    from monkey.commands.trust import add_parser as add_trust_parser

    add_trust_parser(sub)
    from monkey.commands.plugins import add_parser as add_plugins_parser

    add_plugins_parser(sub)
    from monkey.commands.undo import add_parsers as add_checkpoint_parsers

    add_checkpoint_parsers(sub, _positive_int)
    from monkey.commands.stats import add_parser as add_stats_parser

    add_stats_parser(sub)
    from monkey.commands.worktrees import add_parser as add_worktrees_parser

    add_worktrees_parser(sub)
    return parser


def _unknown_command(parser, args_list: list[str], said: str = "") -> str:
    """``unknown command 'agnet'; did you mean 'agent'?`` when a command word is none, else ''.

    Looks at the first word, and at the next one under a command that has its own
    (``sessions lst``).
    """
    import difflib

    commands = parser.get_default("_commands")
    if not commands or not args_list or args_list[0].startswith("-"):
        return ""
    word = args_list[0]
    if word in commands:
        return _unknown_command(commands[word], args_list[1:], f"{said}{word} ")
    close = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.6)
    hint = f"did you mean '{said}{close[0]}'?" if close else "commands: " + ", ".join(commands)
    return f"unknown command '{said}{word}'; {hint}"


def _supervise_children() -> None:
    """This monkey catches its children's orphans and kills those that dead monkeys left."""
    from monkey.children import install
    from monkey.config import monkey_home

    install(monkey_home() / "children")


EXIT_PIPE_CLOSED = 141
"""Exit status when stdout's reader went away (``monkey ... | head``): 128 + SIGPIPE, as a shell says."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``monkey`` command: every command ends quietly (141) when stdout's reader went away."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # what is left in the buffer, while a closed pipe can still be caught here
        return code
    except BrokenPipeError:
        _stdout_to_null()
        return EXIT_PIPE_CLOSED


def _stdout_to_null() -> None:
    from monkey.line.output import stdout_to_null

    stdout_to_null()


def _main(argv: list[str] | None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list == ["--version"]:  # the fast path: no argparse, no package imports
        from monkey import __version__

        sys.stdout.write(f"monkey {__version__}\n")
        return EXIT_OK
    undumpable()
    from monkey.process import hide_secrets

    hide_secrets()  # root's children pass PR_SET_DUMPABLE: keys blanked where /proc/<pid>/environ shows them
    if not args_list and sys.stdin.isatty() and sys.stdout.isatty():
        args_list = ["agent"]  # bare `monkey` on a terminal opens the app, as claude, codex and aider do
    return run_command(args_list, process=True)


def run_command(args_list: list[str], *, process: bool = False) -> int:
    """Parse and run one ``monkey`` command line; its exit status.

    ``process``: this is monkey's own process (:func:`main`), so it also takes the process-wide
    duties: the collector's hold, the children's supervision and the logging handlers. The tests
    run command lines in their own process without them.
    """
    parser = build_parser(only="agent" if args_list[:1] == ["agent"] else None)
    unknown = _unknown_command(parser, args_list)
    if unknown:
        sys.stderr.write(f"monkey: {unknown}\n")
        return EXIT_USAGE
    args = parser.parse_args(args_list)
    if process and args.command == "agent":  # no collections until the app's first frame (the line front ends: at once)
        from monkey.ui.memory import hold_collector

        hold_collector()
    if process and args.command in ("agent", "acp", "serve"):
        _supervise_children()
        if hasattr(args, "verbose") and (problem := _logging(args)):
            sys.stderr.write(f"monkey: {problem}\n")
            return EXIT_USAGE
    if args.command == "agent":
        from monkey.commands.agent import run_agent_command

        return run_agent_command(args)
    if args.command == "sessions":
        from monkey.commands.sessions import run_sessions_command

        return run_sessions_command(args)
    if args.command == "stats":
        from monkey.commands.stats import run_stats_command

        return run_stats_command(args)
    if args.command in ("undo", "restore", "checkpoints"):
        from monkey.commands.undo import run_checkpoint_command

        return run_checkpoint_command(args)
    if args.command == "workflows":
        from monkey.commands.workflows import run_workflows_command

        return run_workflows_command(args)
    if args.command == "trust":
        from monkey.commands.trust import run_trust_command

        return run_trust_command(args)
    if args.command == "plugins":
        from monkey.commands.plugins import run_plugins_command

        return run_plugins_command(args)
    if args.command == "worktrees":
        from monkey.commands.worktrees import run_worktrees_command

        return run_worktrees_command(args)
    if args.command == "acp":
        from monkey.commands.acp import run_acp_command

        return run_acp_command(args)
    if args.command == "web":
        from monkey.commands.web import run_web_command

        return run_web_command(args)
    if args.command == "serve":
        from monkey.commands.serve import run_serve_command

        return run_serve_command(args)
    parser.print_help()
    return EXIT_USAGE if args_list else EXIT_OK
