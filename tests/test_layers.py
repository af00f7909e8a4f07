"""The layering of monkey, checked from the code's own imports (see docs/architecture.md).

Every module under ``monkey/`` is parsed with :mod:`ast`; every ``import`` counts, at the
top of a module, inside a function or under ``TYPE_CHECKING`` alike (a type-only import
is still an arrow a reader follows, and the first step of a cycle). Bottom to top:

- **leaves**: modules that import nothing of monkey above themselves — the typed events
  and the conversation (``events``, ``messages``), ids, escaping (``safe_text``),
  ``config`` and ``trust`` (and ``worktrees``, which trust follows), the SQLite file (``db``), ``gitinfo``,
  ``process`` (child processes:
  process groups, output caps, scrubbed environments; shared by tools and backends) and the
  prompts' text (``prompts``);
- **parts**: ``tools``, ``backends`` (the external agents among them), ``checkpoints``, ``store``,
  ``mcp_client``, ``telemetry``;
- **engine**: what the loop stands on and can never reach back into — the permission engine
  (``permissions``), the context window (``context``) and the extension points (``extensions``);
- **agent**: the loop, the call pipeline, budgets, sub-agents, and the workflow beside it;
- **session**: one running conversation, opening and resuming stored sessions
  (``session/stored.py``), and every command, defined once;
- **front ends**: the Textual app (``ui``), the line front end (``line``: the REPL, the ``--task``
  driver and its output, the person's terminal, signals), editors (``acp``), MCP clients
  (``mcp_server``: ``monkey serve``); each starts its sessions through ``session/setup.py``;
- **the command line**: ``cli``, ``commands`` and ``__main__``, which read flags into the session
  layer's request and choose a front end; no front end imports them.

A module imports only from its own layer or the ones below; the layers below the front
ends never import textual, prompt_toolkit or rich; no module imports another package's
private (``_name``) helpers; and no two modules import each other, however far round.
A new top-level module or package must be placed in a layer here before the test passes.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "monkey"

LAYERS: dict[str, int] = {
    # leaves
    "monkey": 0,  # the package itself: __version__ only
    "monkey.events": 0,
    "monkey.messages": 0,
    "monkey.ids": 0,
    "monkey.safe_text": 0,
    "monkey.config": 0,
    "monkey.config_scope": 0,  # what a project config file may set (config re-exports it)
    "monkey.db": 0,
    "monkey.gitinfo": 0,
    "monkey.process": 0,
    "monkey.credentials": 0,  # credentials kept from children, blanked in /proc, redacted (process re-exports them)
    "monkey.children": 0,  # children die with monkey: parent-death signal, tags, subreaper, guardian
    "monkey.userfiles": 0,  # the person's files in the monkey home: locked, written atomically
    "monkey.trust": 0,  # the folders whose .monkey/ the person trusts (config reads it)
    "monkey.worktrees": 0,  # git worktrees sessions run in (trust follows a worktree to its repository)
    "monkey.modes": 0,  # the permission modes' names (config checks them)
    "monkey.logs": 0,  # logging: structured records, stderr lines, a JSON-lines file, handlers by import path
    "monkey.event_base": 0,  # the base of every event and the records events carry (monkey.events re-exports them)
    "monkey.notify": 0,  # notifications off the terminal: OSC 9/777, notify-send, a webhook
    "monkey.prompts": 0,  # the system, compaction, plan-mode and /init prompts (text only)
    "monkey.http_guard": 0,  # the Host / Origin rules and the listening socket of monkey's HTTP servers
    "monkey.images": 0,  # images a person attaches or file_read reads: the format, size and sides from the header
    # parts the loop uses
    "monkey.tools": 1,
    "monkey.backends": 1,  # model backends and the external agents (claude_code/, codex/, plugin/)
    "monkey.checkpoints": 1,
    "monkey.store": 1,
    "monkey.mcp_client": 1,  # monkey as an MCP client: servers, their tools, pinned definitions
    "monkey.telemetry": 1,  # the OpenTelemetry export of stored events (its SDK imported only when on)
    "monkey.lsp": 1,  # language servers asked after file edits (pygls imported only when one starts)
    # below the loop: the permission engine, the context window, the extension points
    "monkey.permissions": 2,
    "monkey.context": 2,
    "monkey.extensions": 2,  # instructions, skills, hooks, memory
    "monkey.metrics": 2,  # monkey stats and /stats: figures computed from the store's summary rows
    # the loop
    "monkey.agent": 3,
    "monkey.workflow": 3,  # the Think/Plan/Do/Reflect workflow: stages run as turns of an agent, their trace
    # one running conversation, every command
    "monkey.session": 4,
    # front ends
    "monkey.ui": 5,
    "monkey.line": 5,  # the line front end: --plain's REPL, the --task driver and its output, the terminal, signals
    "monkey.acp": 5,
    "monkey.mcp_server": 5,  # monkey serve: monkey's tools for MCP clients, its SDK imported only there
    "monkey.web": 5,  # monkey web: every session of the monkey home in a browser (Starlette)
    # the command line: flags into a session request, then a front end
    "monkey.commands": 6,
    "monkey.cli": 6,
    "monkey.__main__": 6,
}
LAYER_NAMES = ["leaves", "parts", "engine", "agent", "session", "front ends", "command line"]
FRONT_END = 5
UI_LIBRARIES = ("textual", "prompt_toolkit", "rich")


@dataclass(frozen=True)
class Import:
    """One arrow: ``source`` (a module) imports ``target`` at ``file:line``."""

    source: str
    target: str
    file: str
    line: int
    text: str
    names: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The monkey module a dotted name lives in (``monkey.store.Recorder`` -> ``monkey.store``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The source text of ``node`` from the file's lines (columns are UTF-8 byte offsets)."""
    end = node.end_lineno or node.lineno
    chunk = [line.encode() for line in lines[node.lineno - 1 : end]]
    if not chunk:
        return ""
    if len(chunk) == 1:
        return chunk[0][node.col_offset : node.end_col_offset].decode()
    chunk[0], chunk[-1] = chunk[0][node.col_offset :], chunk[-1][: node.end_col_offset]
    return "\n".join(c.decode() for c in chunk)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body`` and in the blocks nested in it (functions, classes, ``if``,
    ``try``, ``with``, loops, ``match``): an import is always a statement, so the expressions,
    most of a file's nodes, need no visit."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                yield from _statements(block)
        for part in getattr(node, "handlers", ()) or getattr(node, "cases", ()):
            yield from _statements(part.body)


def _file_imports(module: str, path: Path, file: str, modules: dict[str, Path]) -> list[Import]:
    """Every import statement of one file, resolved to what it imports."""
    found: list[Import] = []
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()  # once per file: ast.get_source_segment splits the whole file per call
    for node in _statements(ast.parse(source, filename=file).body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        text = " ".join(_segment(lines, node).split())  # one line, even (a,\n b)
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, file, node.lineno, text) for alias in node.names]
        else:
            if node.level:  # relative: from its own package, or one above
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # from monkey import events: the module monkey.events
                    found.append(Import(module, sub, file, node.lineno, text))
                else:
                    found.append(Import(module, base, file, node.lineno, text, (alias.name,)))
    return sorted(found, key=lambda i: i.line)


def _imports(modules: dict[str, Path]) -> list[Import]:
    """Every import of every module under monkey/."""
    return [
        imp
        for module, path in modules.items()
        for imp in _file_imports(module, path, path.relative_to(ROOT).as_posix(), modules)
    ]


def _layer_of(module: str) -> int | None:
    """The layer of a module, from its own entry or its package's; None when it has none."""
    if module == "monkey":
        return LAYERS[module]
    name = module
    while name.count("."):  # monkey.tools.shell, then monkey.tools; never the bare package
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    return None


def _package(module: str) -> str:
    """The top-level part of monkey a module belongs to (``monkey.tools.shell`` -> ``monkey.tools``)."""
    return ".".join(module.split(".")[:2])


def _internal(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.target == "monkey" or i.target.startswith("monkey.")]


def _edges(imports: list[Import], modules: dict[str, Path]) -> dict[str, dict[str, Import]]:
    """Module -> module it imports -> the first import statement that does it."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in _internal(imports):
        target = _owner(imp.target, modules)
        if target is None or target == imp.source:
            continue
        edges.setdefault(imp.source, {}).setdefault(target, imp)
    return edges


def ui_library_imports(imports: list[Import]) -> list[str]:
    """Imports of textual, prompt_toolkit or rich below the front ends."""
    return [
        f"{i.where()}  ({i.source} is in the {LAYER_NAMES[layer]} layer and imports {i.target})"
        for i in imports
        if (layer := _layer_of(i.source)) is not None and layer < FRONT_END and i.target.split(".")[0] in UI_LIBRARIES
    ]


def upward_imports(imports: list[Import], modules: dict[str, Path]) -> list[str]:
    """Imports of a module in a higher layer than the importer's."""
    wrong = []
    for imp in _internal(imports):
        src, dst = _layer_of(imp.source), _layer_of(_owner(imp.target, modules) or imp.target)
        if src is not None and dst is not None and dst > src:
            wrong.append(f"{imp.where()}  ({imp.source}, {LAYER_NAMES[src]}, imports {imp.target}, {LAYER_NAMES[dst]})")
    return wrong


def private_imports(imports: list[Import], modules: dict[str, Path]) -> list[str]:
    """``_name`` helpers imported from another package."""
    return [
        f"{i.where()}  ({i.source} uses {name} of {i.target})"
        for i in _internal(imports)
        for name in i.names
        if name.startswith("_")
        and not name.startswith("__")
        and _package(i.source) != _package(_owner(i.target, modules) or i.target)
    ]


def _components(nodes: list[str], edges: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(nodes):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(edges.get(start, {}))))]
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _loop_in(component: list[str], edges: dict[str, dict[str, Import]]) -> list[Import]:
    """One closed path through a cycle, as the imports that make it (breadth-first: a shortest one)."""
    members = set(component)
    start = component[0]
    paths: dict[str, list[Import]] = {start: []}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt, imp in sorted(edges.get(node, {}).items()):
            if nxt == start:
                return [*paths[node], imp]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], imp]
                queue.append(nxt)
    raise AssertionError(f"no loop through {component}")  # a component always has one


def import_cycles(imports: list[Import], modules: dict[str, Path]) -> list[str]:
    """Every import cycle but the allowed ones, each with the import statements that close it."""
    edges = _edges(imports, modules)
    reports = []
    for component in _components(list(modules), edges):
        loop = _loop_in(component, edges)
        reports.append(f"cycle through {', '.join(component)}:\n" + "\n".join(f"  {i.where()}" for i in loop))
    return reports


@functools.cache
def _tree() -> tuple[dict[str, Path], list[Import]]:
    """Every module and every import under monkey/, read once per test process when a test first
    asks (not while the suite is collected)."""
    modules = _modules()
    return modules, _imports(modules)


def all_modules() -> dict[str, Path]:
    return _tree()[0]


def all_imports() -> list[Import]:
    return _tree()[1]


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in all_modules() if _layer_of(m) is None)
    assert not unplaced, (
        f"modules in no layer: {', '.join(unplaced)}; place each in LAYERS in tests/test_layers.py "
        "and in the table of docs/architecture.md"
    )


def test_core_never_imports_a_ui_library() -> None:
    wrong = ui_library_imports(all_imports())
    assert not wrong, "below the front ends, nothing imports textual, prompt_toolkit or rich:\n" + "\n".join(wrong)


def test_no_import_runs_upward() -> None:
    wrong = upward_imports(all_imports(), all_modules())
    assert not wrong, "imports that run upward (a layer imports one above it):\n" + "\n".join(wrong)


def test_no_private_helper_crosses_a_package() -> None:
    wrong = private_imports(all_imports(), all_modules())
    assert not wrong, (
        "private names imported from another package (make them public in a module "
        "both can import):\n" + "\n".join(wrong)
    )


def test_no_import_cycles() -> None:
    wrong = import_cycles(all_imports(), all_modules())
    assert not wrong, "import cycles (a module imports, however far round, one that imports it):\n" + "\n".join(wrong)


ENGINE_NEVER_IMPORTS = (
    "monkey.agent",
    "monkey.workflow",
    "monkey.session",
    "monkey.ui",
    "monkey.line",
    "monkey.commands",
    "monkey.cli",
    "monkey.__main__",
    "monkey.acp",
    "monkey.mcp_server",
)
"""What the permission engine stands below: the loop, the session and every front end."""


def engine_reaching_up(imports: list[Import], modules: dict[str, Path]) -> list[str]:
    """Imports from ``monkey.permissions`` into the loop, the session or a front end."""
    wrong = []
    for imp in _internal(imports):
        target = _owner(imp.target, modules) or imp.target
        if _package(imp.source) == "monkey.permissions" and _package(target) in ENGINE_NEVER_IMPORTS:
            wrong.append(f"{imp.where()}  ({imp.source} imports {target})")
    return wrong


def test_the_permission_engine_never_imports_the_loop_the_session_or_a_front_end() -> None:
    wrong = engine_reaching_up(all_imports(), all_modules())
    assert not wrong, (
        "monkey.permissions decides every call for the loop, the session and the front ends, so it must "
        "never import them (name what it needs of them as a Protocol, as external_gate.CallPath does):\n"
        + "\n".join(wrong)
    )


def test_an_engine_import_of_the_loop_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "monkey" / "permissions" / "planted.py"
    path.parent.mkdir(parents=True)
    path.write_text("from monkey.agent.calls import CallPipeline\n", encoding="utf-8")
    found = _file_imports("monkey.permissions.planted", path, "monkey/permissions/planted.py", all_modules())
    assert engine_reaching_up(found, all_modules()) == [
        "monkey/permissions/planted.py:1: from monkey.agent.calls import CallPipeline  "
        "(monkey.permissions.planted imports monkey.agent.calls)"
    ]


# The checks themselves, on a planted module: each kind of import is seen and reported
# with its file, line and statement.

PLANTED = """\
from __future__ import annotations

from typing import TYPE_CHECKING

from monkey.events import Event
from monkey.tools.process import _helper

if TYPE_CHECKING:
    from monkey.ui.app import MonkeyApp


def later() -> None:
    from rich.text import Text
    import monkey.agent.loop
"""


@pytest.fixture
def planted(tmp_path: Path) -> tuple[list[Import], dict[str, Path]]:
    """``monkey/store/planted.py`` with the imports above, beside the real modules."""
    path = tmp_path / "planted.py"
    path.write_text(PLANTED, encoding="utf-8")
    modules = {**all_modules(), "monkey.store.planted": path}
    imports = _file_imports("monkey.store.planted", path, "monkey/store/planted.py", modules)
    return imports, modules


def test_a_ui_import_in_a_function_is_reported(planted: tuple[list[Import], dict[str, Path]]) -> None:
    imports, _ = planted
    assert ui_library_imports(imports) == [
        "monkey/store/planted.py:13: from rich.text import Text  "
        "(monkey.store.planted is in the parts layer and imports rich.text)"
    ]


def test_upward_imports_under_type_checking_and_in_functions_are_reported(
    planted: tuple[list[Import], dict[str, Path]],
) -> None:
    imports, modules = planted
    assert upward_imports(imports, modules) == [
        "monkey/store/planted.py:9: from monkey.ui.app import MonkeyApp  "
        "(monkey.store.planted, parts, imports monkey.ui.app, front ends)",
        "monkey/store/planted.py:14: import monkey.agent.loop  "
        "(monkey.store.planted, parts, imports monkey.agent.loop, agent)",
    ]


def test_a_private_import_from_another_package_is_reported(planted: tuple[list[Import], dict[str, Path]]) -> None:
    imports, modules = planted
    assert private_imports(imports, modules) == [
        "monkey/store/planted.py:6: from monkey.tools.process import _helper  "
        "(monkey.store.planted uses _helper of monkey.tools.process)"
    ]


def test_a_cycle_is_reported_with_the_imports_that_close_it(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("from monkey.store import b\n", encoding="utf-8")
    b.write_text("import os\n\n\ndef f():\n    from monkey.store.c import x\n", encoding="utf-8")
    c.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from monkey.store.a import y\n", encoding="utf-8"
    )
    modules = {"monkey.store": tmp_path, "monkey.store.a": a, "monkey.store.b": b, "monkey.store.c": c}
    imports = [
        imp
        for name, path in modules.items()
        if path.is_file()
        for imp in _file_imports(name, path, f"monkey/store/{path.name}", modules)
    ]
    assert import_cycles(imports, modules) == [
        "cycle through monkey.store.a, monkey.store.b, monkey.store.c:\n"
        "  monkey/store/a.py:1: from monkey.store import b\n"
        "  monkey/store/b.py:5: from monkey.store.c import x\n"
        "  monkey/store/c.py:3: from monkey.store.a import y"
    ]


def test_a_module_outside_every_layer_has_none() -> None:
    assert _layer_of("monkey.tools.shell") == LAYERS["monkey.tools"]
    assert _layer_of("monkey") == LAYERS["monkey"]
    assert _layer_of("monkey.newthing") is None
    assert _layer_of("monkey.newthing.part") is None


def test_a_relative_import_and_a_split_line_are_resolved(tmp_path: Path) -> None:
    path = tmp_path / "shell.py"
    path.write_text("from ..agent.loop import (\n    Agent,\n    _StopTurn,\n)\n", encoding="utf-8")
    imports = _file_imports("monkey.tools.shell", path, "monkey/tools/shell.py", all_modules())
    assert [(i.target, i.names, i.where()) for i in imports] == [
        ("monkey.agent.loop", ("Agent",), "monkey/tools/shell.py:1: from ..agent.loop import ( Agent, _StopTurn, )"),
        (
            "monkey.agent.loop",
            ("_StopTurn",),
            "monkey/tools/shell.py:1: from ..agent.loop import ( Agent, _StopTurn, )",
        ),
    ]
    assert len(upward_imports(imports, all_modules())) == 2
    assert len(private_imports(imports, all_modules())) == 1


def test_an_import_in_any_block_is_found(tmp_path: Path) -> None:
    path = tmp_path / "nested.py"
    path.write_text(
        "try:\n    import a1\nexcept ImportError:\n    import a2\nelse:\n    import a3\nfinally:\n    import a4\n"
        "with open('x') as f:\n    import a5\n"
        "while False:\n    import a6\nelse:\n    import a7\n"
        "for _ in ():\n    import a8\n"
        "match 1:\n    case 1:\n        import a9\n"
        "class C:\n    import a10\n\n    async def m(self):\n        if True:\n            import a11\n",
        encoding="utf-8",
    )
    found = _file_imports("monkey.tools.nested", path, "monkey/tools/nested.py", {})
    assert sorted(int(i.target[1:]) for i in found) == list(range(1, 12))
