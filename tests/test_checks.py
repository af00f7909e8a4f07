"""The checks that keep the code readable, run with the tests (``tools/check`` runs them by hand).

- ``ruff check``: pycodestyle, pyflakes, bugbear, pyupgrade, simplify and the size limits on
  functions, as configured in ``pyproject.toml``, over the whole repository;
- ``mypy``: the types of ``monkey/`` (``[tool.mypy]`` in ``pyproject.toml``);
- module size: no module under ``monkey/`` grows past :data:`MAX_LINES` lines; the few that were
  over when the limit came keep their size then as a ceiling, so they can only shrink;
- one harness: no file under ``tests/`` imports from another test module, a ``conftest.py`` or any
  helper outside ``tests/support/`` (a helper two test files need lives there, once).

Each fails with the tool's own output. A tool that is not installed skips its test and says how
to install it (``pip install -e '.[dev]'``); CI installs them.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "monkey"
TESTS = ROOT / "tests"

MAX_LINES = 600
"""Modules stay under about 600 lines: past that, split one (see docs/development.md)."""

OVER_THE_LIMIT: dict[str, int] = {}
"""Modules over :data:`MAX_LINES` when the limit came, with their size then as a ceiling."""


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]' installs it)")
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_ruff_finds_nothing() -> None:
    run = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert run.returncode == 0, f"ruff check found problems:\n{run.stdout}{run.stderr}"


def test_the_code_is_formatted() -> None:
    run = _run("ruff", "format", "--check", "--no-cache", ".")
    assert run.returncode == 0, f"ruff format would change files (run tools/check --fix):\n{run.stdout}{run.stderr}"


@pytest.mark.timeout(600)  # without its cache (a fresh clone) mypy takes 40 s on a quiet machine, minutes under load
def test_mypy_finds_nothing() -> None:
    run = _run("mypy")
    assert run.returncode == 0, f"mypy found problems:\n{run.stdout}{run.stderr}"


def _sizes() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def over_the_limit(sizes: dict[str, int], ceilings: dict[str, int], limit: int = MAX_LINES) -> list[str]:
    """What is wrong with these module sizes: each module too long, and each ceiling no longer needed."""
    wrong = []
    for name, lines in sizes.items():
        ceiling = ceilings.get(name, limit)
        if lines > ceiling:
            wrong.append(
                f"monkey/{name}: {lines} lines, over {ceiling}"
                + (
                    " (its size when the limit came: it may only shrink)"
                    if name in ceilings
                    else f" (modules stay under ~{limit} lines: split it)"
                )
            )
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
    assert over_the_limit({"a.py": 601}, {}) == [
        "monkey/a.py: 601 lines, over 600 (modules stay under ~600 lines: split it)"
    ]
    said = over_the_limit({"events.py": 659}, {"events.py": 658})
    assert said == ["monkey/events.py: 659 lines, over 658 (its size when the limit came: it may only shrink)"]
    assert over_the_limit({"events.py": 590}, {"events.py": 658}) == [
        "monkey/events.py is back under 600 lines: take it out of OVER_THE_LIMIT"
    ]
    assert over_the_limit({}, {"events.py": 658}) == ["monkey/events.py is gone: take it out of OVER_THE_LIMIT"]


def _imported(tree: ast.AST, package: str, root: Path) -> list[tuple[int, str]]:
    """Every module a file imports (at the top, in a function or under TYPE_CHECKING alike), with its
    line; ``package`` is the file's own package, to resolve relative imports."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            if (root / base.replace(".", "/")).is_dir():  # ``from tests.x import y``: y may be a module
                found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, base))
    return found


def _python_files(folder: Path) -> list[Path]:
    """The Python files of a test tree, in order, without the npm programs' own."""
    return [path for path in sorted(folder.rglob("*.py")) if "node_modules" not in path.parts]


def foreign_test_imports(tests: Path, root: Path) -> list[str]:
    """Imports in the test tree that reach past ``tests.support``: of another test module, a conftest,
    or a helper kept beside the tests (``path:line imports name``)."""
    wrong = []
    for path in _python_files(tests):
        relative = path.relative_to(root)
        package = ".".join(relative.parent.parts)
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8"), str(path)), package, root):
            top = name.split(".")[0]
            allowed = name == "tests.support" or name.startswith("tests.support.")
            if (top == "tests" and not allowed) or top == "conftest" or name.split(".")[-1] == "conftest":
                wrong.append(f"{relative.as_posix()}:{line} imports {name}")
    return wrong


def test_tests_import_helpers_only_from_tests_support() -> None:
    wrong = foreign_test_imports(TESTS, ROOT) + foreign_test_imports(ROOT / "snapshots", ROOT)
    assert not wrong, "a test imports from outside tests/support/ (move the helper there, once):\n" + "\n".join(wrong)


def test_the_import_check_catches_a_test_importing_another(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    for folder in ("ui", "tools", "support/fakes"):
        (tests / folder).mkdir(parents=True)
    (tests / "ui" / "test_a.py").write_text(
        "import json\nimport pytest\nfrom tests.support.app import notices\nfrom tests.support import cli\n"
        "import tests.support.fakes.loopback\nfrom tests.ui.test_app import SIZE\n"
        "def f():\n    from tests.web.test_api import ANSWER\n    import tests.conftest\n"
    )
    (tests / "tools" / "test_b.py").write_text(
        "from .test_gitignore import make\nfrom . import conftest\nfrom .. import ui\nfrom ..support import pty\n"
        "from conftest import ws\nfrom tests import conftest as c\n"
    )
    (tests / "support" / "fakes" / "x.py").write_text("from ..app import until\nfrom tests.cli.test_trust import run\n")
    assert foreign_test_imports(tests, tmp_path) == [
        "tests/support/fakes/x.py:2 imports tests.cli.test_trust",
        "tests/tools/test_b.py:1 imports tests.tools.test_gitignore",
        "tests/tools/test_b.py:2 imports tests.tools.conftest",
        "tests/tools/test_b.py:3 imports tests.ui",
        "tests/tools/test_b.py:5 imports conftest",
        "tests/tools/test_b.py:6 imports tests.conftest",
        "tests/ui/test_a.py:6 imports tests.ui.test_app",
        "tests/ui/test_a.py:8 imports tests.web.test_api",
        "tests/ui/test_a.py:9 imports tests.conftest",
    ]


HEAVY_SDKS = "anthropic openai acp mcp playwright lsprotocol pygls llama_cpp claude_agent_sdk tiktoken".split()
"""Packages that take from a quarter of a second to two seconds to import: a test module imports them in the
tests that use them, not at its top, or every run of the suite pays for them while it collects."""


def heavy_imports_at_the_top(folders: list[Path], root: Path) -> list[str]:
    """Top-level imports of :data:`HEAVY_SDKS` in the test trees (``path:line imports name``); a program the
    tests start as a process (it has ``if __name__ == "__main__"``) is not collected and may import them."""
    wrong = []
    for folder in folders:
        for path in _python_files(folder):
            source = path.read_text(encoding="utf-8")
            if '__name__ == "__main__"' in source:
                continue
            for node in ast.parse(source, str(path)).body:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                wrong += [
                    f"{path.relative_to(root).as_posix()}:{node.lineno} imports {name}"
                    for name in names
                    if name.split(".")[0] in HEAVY_SDKS
                ]
    return wrong


def test_test_modules_import_the_heavy_sdks_only_where_they_are_used() -> None:
    wrong = heavy_imports_at_the_top([TESTS, ROOT / "snapshots"], ROOT)
    assert not wrong, "import these inside the tests that use them (collection pays for them):\n" + "\n".join(wrong)


def test_the_heavy_import_check_catches_a_top_level_import(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_a.py").write_text(
        "import json\nimport anthropic.types\nfrom acp.schema import X\nfrom .acp import y\n"
        "def test():\n    import mcp\n"
    )
    (tmp_path / "t" / "server.py").write_text('import mcp\nif __name__ == "__main__":\n    pass\n')
    assert heavy_imports_at_the_top([tmp_path / "t"], tmp_path) == [
        "t/test_a.py:2 imports anthropic.types",
        "t/test_a.py:3 imports acp.schema",
    ]
