"""``monkey web``: serve the monitor of every session in the monkey home (see :mod:`monkey.web`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run_web_command"]


def add_parser(sub: Any) -> None:
    """``monkey web [--port N] [--host ADDR] [--open]``."""
    web = sub.add_parser(
        "web",
        help="watch every session from a browser",
        description="Serve a monitor of every session in the monkey home (all workspaces, "
        "live) on 127.0.0.1, and print its link once (url: ...?token=...).",
    )
    web.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    web.add_argument("--host", help="the address to bind (default 127.0.0.1); the link's token is needed anyway")
    web.add_argument("--open", action="store_true", help="open the link in a browser")


def run_web_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP (then 0); the exit status."""
    import asyncio

    from monkey.store.store import StoreError
    from monkey.web.server import WebFront, WebSettings

    if not 0 <= args.port <= 65535:
        sys.stderr.write(f"monkey: a port is between 1 and 65535, got {args.port}\n")
        return 2
    front = WebFront(WebSettings(host=args.host or "127.0.0.1", port=args.port), open_browser=args.open)

    async def main() -> None:
        import signal

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, front.stop)
        await front.serve()

    try:
        asyncio.run(main())
    except OSError as exc:
        sys.stderr.write(f"monkey: cannot listen on {args.host or '127.0.0.1'}:{args.port}: {exc.strerror or exc}\n")
        return 1
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
