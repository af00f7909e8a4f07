"""The checks that keep the code readable, run with the tests (``tools/check`` runs them by hand).

- ``ruff check``: pycodestyle, pyflakes, bugbear, pyupgrade, simplify and the size limits on
  functions, as configured in ``pyproject.toml``, over the whole repository;
- ``mypy``: the types of ``monkey/`` (``[tool.mypy]`` in ``pyproject.toml``);
- module size: no module under ``monkey/`` grows past :data:`MAX_LINES` lines; the few that were
  over when the limit came keep their size then as a ceiling, so they can only shrink.

Each fails with the tool's own output. A tool that is not installed skips its test and says how
to install it (``pip install -e '.[dev]'``); CI installs them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "monkey"

MAX_LINES = 600
"""Modules stay under about 600 lines: past that, split one (see docs/development.md)."""

OVER_THE_LIMIT: dict[str, int] = {}
"""Modules over :data:`MAX_LINES` when the limit came, with their size then as a ceiling."""


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]' installs it)")
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=600, check=False)


def test_ruff_finds_nothing() -> None:
    run = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert run.returncode == 0, f"ruff check found problems:\n{run.stdout}{run.stderr}"


def test_mypy_finds_nothing() -> None:
    run = _run("mypy")
    assert run.returncode == 0, f"mypy found problems:\n{run.stdout}{run.stderr}"


def _sizes() -> dict[str, int]:
    return {path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(PACKAGE.rglob("*.py"))}


def over_the_limit(sizes: dict[str, int], ceilings: dict[str, int], limit: int = MAX_LINES) -> list[str]:
    """What is wrong with these module sizes: each module too long, and each ceiling no longer needed."""
    wrong = []
    for name, lines in sizes.items():
        ceiling = ceilings.get(name, limit)
        if lines > ceiling:
            wrong.append(f"monkey/{name}: {lines} lines, over {ceiling}"
                         + (" (its size when the limit came: it may only shrink)" if name in ceilings else
                            f" (modules stay under ~{limit} lines: split it)"))
    for name in ceilings:
        if name not in sizes:
            wrong.append(f"monkey/{name} is gone: take it out of OVER_THE_LIMIT")
        elif sizes[name] <= limit:
            wrong.append(f"monkey/{name} is back under {limit} lines: take it out of OVER_THE_LIMIT")
    return wrong


def test_modules_stay_small() -> None:
    wrong = over_the_limit(_sizes(), OVER_THE_LIMIT)
    assert not wrong, "\n".join(wrong)


def test_the_size_check_catches_a_module_that_grows() -> None:
    assert over_the_limit({"a.py": 600, "b.py": 10}, {}) == []
    assert over_the_limit({"a.py": 601}, {}) == ["monkey/a.py: 601 lines, over 600 (modules stay under ~600 lines: "
                                                  "split it)"]
    said = over_the_limit({"events.py": 659}, {"events.py": 658})
    assert said == ["monkey/events.py: 659 lines, over 658 (its size when the limit came: it may only shrink)"]
    assert over_the_limit({"events.py": 590}, {"events.py": 658}) == [
        "monkey/events.py is back under 600 lines: take it out of OVER_THE_LIMIT"]
    assert over_the_limit({}, {"events.py": 658}) == ["monkey/events.py is gone: take it out of OVER_THE_LIMIT"]
