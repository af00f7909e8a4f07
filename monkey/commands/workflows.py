"""``monkey workflows list|show ID``: the traces of workflow runs (``<monkey home>/workflows/*.jsonl``)."""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["add_parser", "run_workflows_command"]


def add_parser(sub) -> None:
    workflows = sub.add_parser(
        "workflows",
        help="list workflow runs, or show one's trace as a table",
        description="Each workflow run (monkey agent --workflow tpdr) writes one line per "
        "stage to workflows/ID.jsonl in the monkey home.",
    )
    inner = workflows.add_subparsers(dest="workflows_command", metavar="COMMAND")
    inner.add_parser("list", help="the workflow runs, most recent first")
    show = inner.add_parser("show", help="one run's trace as a table")
    show.add_argument("id", help="the workflow's id (a unique prefix will do)")
    show.add_argument("--json", action="store_true", help="the trace's lines as they are stored")


def run_workflows_command(args: argparse.Namespace) -> int:
    from monkey.config import monkey_home
    from monkey.safe_text import for_stream
    from monkey.workflow.trace import TraceError, read_trace, trace_table

    home = monkey_home()
    if args.workflows_command == "show":
        try:
            workflow_id, lines = read_trace(home, args.id)
        except TraceError as exc:
            sys.stderr.write(for_stream(f"monkey: {exc}\n", sys.stderr))
            return 1
        if args.json:
            import json

            for line in lines:
                print(for_stream(json.dumps(line, ensure_ascii=False, sort_keys=True), sys.stdout))
            return 0
        session = next((str(line.get("session_id")) for line in lines if line.get("session_id")), "")
        print(
            for_stream(
                f"workflow {workflow_id}"
                + (f" · session {session}" if session else "")
                + f" · {len(lines)} stage{'s' if len(lines) != 1 else ''}",
                sys.stdout,
            )
        )
        for row in trace_table(lines):
            print(for_stream(row, sys.stdout))
        return 0
    if args.workflows_command == "list":
        folder = home / "workflows"
        files = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
        if not files:
            print("no workflow runs yet (monkey agent --workflow tpdr --task ...)")
            return 0
        for path in files:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
            try:
                stages = sum(
                    1 for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
                )
            except OSError:
                stages = 0
            print(for_stream(f"{path.stem}  {when}  {stages} stages", sys.stdout))
        return 0
    sys.stderr.write("monkey: usage: monkey workflows list | monkey workflows show ID\n")
    return 2
