"""``monkey trust``: let a folder's ``.monkey/config.toml`` count in full (see :mod:`monkey.trust`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_parser", "run_trust_command"]


def add_parser(sub) -> None:
    from monkey.trust import TRUST_TURNS_ON

    trust = sub.add_parser(
        "trust",
        help="trust a folder's .monkey/ config, instructions, skills and servers (or --list, --revoke)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A folder's own files count only once you trust it (and the folders inside it).\n"
        "Trusting a folder turns on:\n" + "\n".join(f"  - {item}" for item in TRUST_TURNS_ON),
    )
    trust.add_argument("path", nargs="?", default=None, help="the folder (default: the current one)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the folder")
    trust.add_argument("--list", action="store_true", help="list the trusted folders")


def run_trust_command(args: argparse.Namespace) -> int:
    from monkey.config import monkey_home
    from monkey.safe_text import for_stream
    from monkey.trust import trust, trust_root, trusted_folders, untrust

    home = monkey_home()
    if args.list:
        for listed in trusted_folders(home):
            print(for_stream(listed, sys.stdout))
        return 0
    folder = Path(args.path).expanduser() if args.path else Path.cwd()
    if not folder.is_dir():
        sys.stderr.write(f"monkey: {for_stream(str(folder), sys.stderr)} is not a folder\n")
        return 2
    shown = for_stream(str(trust_root(folder)), sys.stdout)  # a worktree: its repository
    if args.revoke:
        if untrust(folder, home):
            print(f"no longer trusted: {shown}")
        else:
            print(f"{shown} was not trusted itself (monkey trust --list shows what is)")
        return 0
    try:
        trust(folder, home)
    except OSError as exc:
        sys.stderr.write(f"monkey: cannot save the trusted folders in {home}: {exc.strerror or exc}\n")
        return 1
    print(
        f"trusted: {shown} (its .monkey/config.toml, instruction files, skills, sub-agents, plugins and "
        "MCP servers now count: monkey trust --help lists them)"
    )
    return 0
