"""``monkey stats``: what the agent spent and how it went, from the stored sessions (no model is called)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

__all__ = ["add_parser", "run_stats_command"]


def add_parser(sub) -> None:
    stats = sub.add_parser(
        "stats",
        help="tokens, cost, timings, tool calls and approvals of the stored sessions",
        description="Figures of this workspace's stored sessions (or one session's, or every "
        "workspace's), read from the monkey home's database.",
    )
    stats.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    stats.add_argument(
        "--since", metavar="WHEN", help="from a span back (30m, 12h, 7d, 2w), 'today' or a date (2026-11-01)"
    )
    stats.add_argument(
        "--by",
        choices=("day", "model", "backend", "tool", "session"),
        default="day",
        help="the grouping of the table (default: day)",
    )
    stats.add_argument("--session", metavar="ID", help="one session (id or unique prefix) and its sub-agents")
    stats.add_argument("--all", action="store_true", help="every workspace's sessions")
    stats.add_argument("--cost", action="store_true", help="chart cost per day rather than tokens")
    stats.add_argument("--cwd", help="workspace directory (default: the current directory)")


def run_stats_command(args: argparse.Namespace) -> int:
    """Run ``monkey stats``; the exit status."""
    from monkey.metrics.since import SinceError, parse_since
    from monkey.store import StoreError

    since = None
    if args.since is not None:
        try:
            since = parse_since(args.since)
        except SinceError as exc:
            sys.stderr.write(f"monkey: {exc}\n")
            return 2
    if args.session is not None and args.all:
        sys.stderr.write("monkey: --session and --all do not go together\n")
        return 2
    try:
        return asyncio.run(_run(args, since))
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}\n")
        return 1


async def _run(args: argparse.Namespace, since: float | None) -> int:
    from monkey.metrics.query import Scope, compute
    from monkey.metrics.text import chart, summary, table
    from monkey.safe_text import escape_controls
    from monkey.store import SessionStore

    async with await SessionStore.open(readonly=True) as store:
        if args.session is not None:
            found = await store.find(args.session)
            scope = Scope(session=found.id, since=since)
            where = f"session {found.id}"
        elif args.all:
            scope = Scope(since=since)
            where = "every workspace"
        else:
            workspace = str(Path(args.cwd or ".").expanduser().resolve())
            scope = Scope(workspace=workspace, since=since)
            where = f"this workspace ({escape_controls(workspace, keep_newlines=False)})"
        report = await compute(store, scope, args.by)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(scope), indent=2, ensure_ascii=False) + "\n")
        return 0
    if args.since is not None:
        where += f" since {escape_controls(args.since, keep_newlines=False)}"
    if not report.totals.sessions:
        hint = "" if args.all or args.session else " (--all: every workspace)"
        sys.stdout.write(f"no sessions stored for {where}{hint}\n")
        return 0
    out = [f"monkey stats: {where}", ""]
    out += ["  " + line for line in summary(report.totals)]
    if report.daily:
        out += ["", f"{'cost' if args.cost else 'tokens'} per day"]
        out += ["  " + line for line in chart(report.daily, cost=args.cost)]
    if report.groups:
        out += ["", f"by {args.by}"]
        out += ["  " + line for line in table(args.by, report.groups)]
    sys.stdout.write("\n".join(out) + "\n")
    return 0
