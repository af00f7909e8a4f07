"""What a project ``.monkey/config.toml`` may set: the keys and tables only the person's own file
sets, the programs a project's read-only extras may not name, and the part of a project file an
untrusted folder keeps (:mod:`monkey.config` reads them and re-exports the public names)."""

from __future__ import annotations

from typing import Any

USER_ONLY_KEYS = {
    "shell": ("sandbox", "sandbox_network", "trusted_commands"),
    "logging": ("file", "max_bytes", "backups", "handlers"),
    "anthropic": ("base_url", "api_key_env", "api_key"),
    "openai": ("base_url", "api_key_env"),
    "claude_code": ("executable", "env", "extra_args", "mcp_config"),
    "codex": ("executable", "env", "extra_args"),
    "workflow": ("verify",),
    "notify": ("url", "headers"),
}
"""What only the user's own file may set, trusted folder or not: a repository never loosens
the sandbox its own commands run in, never chooses where a credential goes (an endpoint, the
variable a key is read from, a program's environment, where notifications go) nor which program runs (an agent CLI and
its arguments, a verify command)."""
USER_ONLY_SECTIONS = ("hooks", "plugins", "agents", "acp_agents")
"""Whole tables only the user's own file sets: hooks' commands, plugins' and aliases' settings
(their ``env`` takes monkey's own variables, ``${ANTHROPIC_API_KEY}``), ACP agents' programs."""

EXECUTES_FILES = frozenset(
    "make gmake bmake cmake ninja meson bazel bazelisk buck scons just task python pypy py node nodejs deno bun"
    " npm npx pnpm pnpx yarn corepack cargo rustc go java javac mvn mvnw gradle gradlew ant sbt ruby rake bundle"
    " gem perl php composer lua luajit tclsh r rscript julia swift dotnet mono gcc g++ cc c++ clang clang++ tox"
    " nox pytest py.test uv uvx poetry pdm hatch pip pipx conda docker podman bash sh zsh dash ksh fish csh tcsh"
    " busybox env xargs sudo doas su nice nohup timeout time exec eval source . command builtin stdbuf setsid"
    " strace ltrace gdb watch parallel find git awk gawk mawk sed vim vi nvim emacs ssh".split()
)
"""Programs that run other programs or the project's own files (build tools, interpreters, shells,
wrappers): a project's ``approvals.read_only_extra`` may not name them (the user's own file may)."""


def executes_files(prefix: str) -> bool:
    """Whether a read-only command prefix (``"make -n"``) starts with a program of :data:`EXECUTES_FILES`."""
    import re

    words = prefix.split()
    if not words:
        return False
    name = words[0].rsplit("/", 1)[-1].lower()
    return name in EXECUTES_FILES or re.sub(r"[\d.]+$", "", name) in EXECUTES_FILES or "=" in name


UNTRUSTED_KEYS = {"approvals": {"deny"}, "ui": {"bell", "title", "long_turn"}}
"""What a project file may set in a folder the person has not trusted: more deny rules, and
how the app calls the person back. Everything else waits for trust."""


_RUNS_PROGRAM = ("plugin:", "acp:")
"""Backend names that run a program the person's own config names."""


def plugin_backends(project: dict[str, Any]) -> list[str]:
    """Drop a project's choice of an agent plugin or an ACP agent as the backend (a program to run); the keys dropped."""
    dropped: list[str] = []
    for section, key in (("agent", "backend"), ("backend", "primary")):
        table = project.get(section)
        if isinstance(table, dict) and str(table.get(key, "")).startswith(_RUNS_PROGRAM):
            dropped.append(f"{section}.{key} = {table.pop(key)!r}")
    backend = project.get("backend")
    if isinstance(backend, dict) and isinstance(backend.get("fallbacks"), list):
        plugins = [f for f in backend["fallbacks"] if str(f).startswith(_RUNS_PROGRAM)]
        backend["fallbacks"] = [f for f in backend["fallbacks"] if not str(f).startswith(_RUNS_PROGRAM)]
        dropped += [f"backend.fallbacks {f!r}" for f in plugins]
    return dropped


def untrusted_part(project: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The part of a project file an untrusted folder may set, and the dotted keys left out."""
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    for section, value in project.items():
        allowed = UNTRUSTED_KEYS.get(section, set())
        if not isinstance(value, dict):
            ignored.append(section)
            continue
        for key, item in value.items():
            if key in allowed:
                kept.setdefault(section, {})[key] = item
            else:
                ignored.append(f"{section}.{key}")
    return kept, ignored
