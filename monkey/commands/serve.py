"""``monkey serve``: monkey's tools for MCP clients, over stdio (``monkey serve``) or HTTP (``monkey serve http``).

The session is built for the workspace (``--cwd``) by the session layer, from the request the
flags make and the same config as ``monkey agent``: rules, mode, sandbox, checkpoints. Both transports run the same server
(:func:`monkey.mcp_server.server.build_server`). Logs go to stderr; in stdio mode stdout is the
protocol and nothing else is written there.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run_serve_command"]


class _Intermixed(argparse.ArgumentParser):
    """A parser whose positionals may stand among its options (``serve http --cwd X 8080``).

    argparse gives a run of positionals their values at once, so a PORT after an option was
    an unrecognised argument; this parser reads positionals wherever they stand. The
    subcommand's parser is made one after :meth:`add_parser` created it (argparse takes one
    parser class for every subcommand).
    """

    _mixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._mixing:  # parse_known_intermixed_args calls back here with the positionals set aside
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def add_parser(sub: Any, model_flags: Any, mode_flag: Any) -> None:
    """``monkey serve [http [PORT]]`` and its flags (PORT may come after them)."""
    serve = sub.add_parser(
        "serve",
        help="serve monkey's tools to MCP clients (stdio, or http)",
        description="Run monkey as an MCP server: its tools, confined to the workspace, "
        "through its rules, checkpoints and sandbox. Without a transport it speaks MCP on "
        "stdin/stdout; 'http [PORT]' serves streamable HTTP on 127.0.0.1.",
    )
    serve.__class__ = _Intermixed
    serve.add_argument(
        "transport", nargs="?", choices=("stdio", "http"), default="stdio", help="stdio (default) or http"
    )
    serve.add_argument("port_arg", nargs="?", metavar="PORT", help="http: the port (default: a free one)")
    serve.add_argument("--port", help="http: the port (default: a free one)")
    serve.add_argument("--host", help="http: the address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--token",
        help="http: the bearer token clients must send (default: $MONKEY_SERVE_TOKEN; "
        "else made and printed once on stderr)",
    )
    serve.add_argument("--cwd", help="workspace directory (default: the current directory)")
    serve.add_argument("-l", "--local", action="store_true", help="use the embedded local model (no network)")
    serve.add_argument("--no-approval", action="store_true", help="the same as --mode auto")
    mode_flag(serve)
    model_flags(serve, per="task")


def _fail(message: str, code: int = 2) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    sys.stderr.flush()
    return code


def _port(args: argparse.Namespace) -> int:
    """The port the flags name (0: a free one); ValueError with the reason."""
    given = [p for p in (args.port_arg, args.port) if p is not None]
    if len(given) == 2 and given[0] != given[1]:
        raise ValueError(f"the port is given twice ({given[0]} and --port {given[1]}); give one")
    if not given:
        return 0
    try:
        port = int(given[0])
    except ValueError:
        raise ValueError(f"not a port number: {given[0]!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"a port is between 1 and 65535, got {port}")
    return port


async def _stdio(host: Any) -> None:
    from monkey.mcp_server.server import build_server
    from monkey.mcp_server.stdio import run_stdio

    await run_stdio(build_server(host))


async def _main(args: argparse.Namespace, settings: Any) -> int:
    import asyncio
    import signal

    from monkey.commands.flags import session_request
    from monkey.line.terminal import terminal_questions
    from monkey.mcp_server.host import build_host

    host = build_host(session_request(args), terminal_questions())
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    stopped: list[int] = []
    front: Any = None
    if settings is not None:
        from monkey.mcp_server.http import HttpFront

        front = HttpFront(host, settings)

    def stop(signum: int) -> None:
        stopped.append(signum)
        if front is not None:
            front.stop()
        elif task is not None:
            task.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)
    try:
        if front is None:
            await _stdio(host)
        else:
            await front.serve()
    except asyncio.CancelledError:
        if not stopped:
            raise
    finally:
        await host.close()
    return 128 + stopped[0] if stopped else 0


def run_serve_command(args: argparse.Namespace) -> int:
    """Run ``monkey serve`` until the client goes away or a signal ends it; the exit status."""
    import asyncio

    from monkey.backends.base import BackendError
    from monkey.session.setup import SetupError

    try:
        import mcp  # noqa: F401
    except ImportError:
        return _fail("monkey serve needs the MCP SDK: pip install 'mcp>=2.3'", 1)
    settings = None
    if args.transport == "http":
        from monkey.mcp_server.http import HttpSettings

        try:
            settings = HttpSettings.from_flags(args.host, _port(args), args.token)
        except ValueError as exc:
            return _fail(str(exc))
    elif args.port_arg is not None or args.port is not None or args.host or args.token:
        return _fail("--port, --host, --token and PORT are for 'monkey serve http'")
    try:
        return asyncio.run(_main(args, settings))
    except SetupError as exc:
        return _fail(str(exc))
    except BackendError as exc:
        return _fail(exc.message, 1)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the address cannot be bound
        where = f"{settings.host}:{settings.port}" if settings is not None else "stdio"
        return _fail(f"cannot serve on {where}: {exc.strerror or exc}", 1)
