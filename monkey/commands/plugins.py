"""``monkey plugins list|validate|info``: the agent plugins monkey finds, checked for real.

``list`` starts each plugin (and each alias's) once to ask ``agent.init`` and
``agent.available`` (at once, each within ``--timeout``); ``validate NAME|PATH`` checks the
manifest, then the ``agent.init`` / ``agent.available`` round trip, then, with ``--run
PROMPT``, a smoke ``agent.run`` offered no tools (a tool the plugin asks for anyway is not
run: it is told so), each step said on its own line; ``info NAME`` shows the manifest and the
settings that apply, without starting anything. What a plugin says is escaped before it is
printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run_plugins_command"]


def add_parser(sub) -> None:
    plugins = sub.add_parser(
        "plugins",
        help="list, validate and describe agent plugins",
        description="Agent plugins: programs speaking JSON-RPC on stdio, used with --backend plugin:NAME.",
    )
    psub = plugins.add_subparsers(dest="plugins_command", metavar="ACTION")
    plugins.set_defaults(_commands=psub.choices)
    ls = psub.add_parser("list", help="every plugin and alias: version, capabilities, available or why not")
    ls.add_argument("--json", action="store_true", help="one JSON array")
    ls.add_argument(
        "--no-check", action="store_true", help="do not start the plugins to ask whether they are available"
    )
    validate = psub.add_parser("validate", help="check a plugin: manifest, agent.init, agent.available, a smoke run")
    validate.add_argument(
        "target", metavar="NAME|PATH", help="a plugin or alias name, or a plugin folder / plugin.yaml"
    )
    validate.add_argument("--run", metavar="PROMPT", help="also send agent.run with PROMPT (no tools offered)")
    info = psub.add_parser("info", help="a plugin's manifest and the settings that apply")
    info.add_argument("name", help="a plugin or alias name")
    for p in (ls, validate, info):
        p.add_argument("--cwd", help="workspace (its trusted .monkey/plugins count; default: the current folder)")
        p.add_argument("--timeout", type=float, default=20.0, help="seconds each plugin has to answer (default 20)")


def _shown(text: Any) -> str:
    from monkey.safe_text import escape_controls

    return escape_controls(str(text))


class _Context:
    def __init__(self, args: argparse.Namespace) -> None:
        from monkey.config import load_config, monkey_home
        from monkey.backends.plugin.discovery import discover

        self.workspace = Path(args.cwd or os.getcwd()).resolve()
        self.home = monkey_home()
        self.config = load_config(self.workspace)
        self.catalog = discover(self.home, self.workspace, bool(self.config.approvals.trust_project))

    def resolve(self, name: str):
        from monkey.backends.plugin.discovery import resolve

        return resolve(name, self.catalog, self.config.plugins, self.config.agents)


def run_plugins_command(args: argparse.Namespace) -> int:
    from monkey.config import ConfigError
    from monkey.backends.plugin.discovery import PluginError

    action = getattr(args, "plugins_command", None)
    if action is None:
        sys.stderr.write("monkey: plugins needs an action: list, validate or info\n")
        return 2
    try:
        ctx = _Context(args)
        if action == "list":
            return asyncio.run(_list(ctx, args))
        if action == "info":
            return _info(ctx, args.name)
        return asyncio.run(_validate(ctx, args))
    except (ConfigError, PluginError) as exc:
        sys.stderr.write(f"monkey: {_shown(exc)}\n")
        return 2


async def _check(resolved, timeout: float) -> tuple[str, str]:
    """``(status, detail)``: ``available`` with the model, or ``unavailable`` / ``error`` with why."""
    from monkey.backends.base import BackendError
    from monkey.backends.plugin.discovery import PluginError
    from monkey.backends.plugin.host import PluginHost

    try:
        host = PluginHost(resolved)
    except PluginError as exc:
        return "error", str(exc)
    try:
        info = await host.handshake(timeout=timeout)
        return "available", info.model
    except BackendError as exc:
        return ("unavailable", host.info.reason) if exc.kind == "unavailable" else ("error", exc.message)
    finally:
        await host.close()


async def _list(ctx: _Context, args: argparse.Namespace) -> int:
    from monkey.backends.plugin.discovery import PluginError

    rows: list[dict[str, Any]] = []
    names = list(ctx.catalog.plugins) + [a for a in ctx.config.agents if a not in ctx.catalog.plugins]
    resolved: dict[str, Any] = {}
    for name in names:
        row: dict[str, Any] = {"name": name}
        try:
            r = resolved[name] = ctx.resolve(name)
        except PluginError as exc:
            row.update(status="error", detail=str(exc))
            rows.append(row)
            continue
        m = r.manifest
        row.update(
            version=m.version,
            source=m.source if not r.chain else f"alias of {m.name}",
            capabilities=list(m.capabilities),
            description=r.description,
            path=str(m.path),
        )
        rows.append(row)
    if not args.no_check:
        checks = await asyncio.gather(
            *(_check(resolved[row["name"]], args.timeout) for row in rows if row["name"] in resolved)
        )
        for row, (status, detail) in zip([r for r in rows if r["name"] in resolved], checks, strict=True):
            row.update(status=status, detail=detail)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            status = row.get("status", "not checked")
            if status == "available":
                said = "available" + (f" (model {row['detail']})" if row.get("detail") else "")
            elif status == "not checked":
                said = "not checked"
            else:
                said = f"{'not available' if status == 'unavailable' else 'error'}: {row['detail']}"
            caps = ", ".join(row.get("capabilities", [])) or "-"
            print(
                _shown(f"{row['name']:<16} {row.get('version', '-'):<8} {row.get('source', '-'):<20} {caps:<24} {said}")
            )
        if not rows:
            print(f"no plugins; put one in {ctx.home / 'plugins'}/NAME/plugin.yaml (see docs/plugins.md)")
    for line in ctx.catalog.problems + ctx.catalog.notes:
        sys.stderr.write(f"monkey: {_shown(line)}\n")
    return 0


def _info(ctx: _Context, name: str) -> int:
    r = ctx.resolve(name)
    m = r.manifest
    lines = [f"{r.name}: {r.description or '(no description)'}"]
    if r.chain:
        lines.append(f"alias: {' -> '.join([*r.chain, m.name])}")
    lines += [
        f"plugin: {m.name} {m.version} ({m.source})",
        f"manifest: {m.path}",
        f"protocol: {m.protocol}",
        f"command: {' '.join(m.command)} (in {m.folder})",
        f"agent: {m.agent_name}, streaming {'yes' if m.streaming else 'no'}",
        f"capabilities: {', '.join(m.capabilities) or 'none'}",
    ]
    settings = r.settings
    for var in m.env:
        value = settings.env.get(var.name)
        where = (
            "set by monkey's config"
            if value is not None
            else (f"default {var.default!r}" if var.default is not None else "not set")
        )
        need = "required" if var.required else "optional"
        lines.append(f"env {var.name} ({need}; {where}): {var.description}")
    for key in sorted(set(settings.env) - {v.name for v in m.env}):
        lines.append(f"env {key} (set by monkey's config)")
    if settings.config or settings.model:
        config = {**settings.config, **({"model": settings.model} if settings.model else {})}
        lines.append(f"agent.init config: {json.dumps(config)}")
    lines.append(
        f"limits: idle {settings.idle_timeout:g} s, run {settings.timeout:g} s, "
        f"lines up to {settings.max_line_bytes} bytes"
    )
    aliases = [a for a, v in ctx.config.agents.items() if isinstance(v, dict) and v.get("extends") == m.name]
    if aliases:
        lines.append(f"aliases: {', '.join(aliases)}")
    lines += [f"warning: {w}" for w in m.warnings]
    lines.append(f"use: monkey agent --backend plugin:{r.name}")
    for line in lines:
        print(_shown(line))
    return 0


async def _validate(ctx: _Context, args: argparse.Namespace) -> int:
    from monkey.backends.base import BackendError
    from monkey.backends.plugin.discovery import PluginError, PluginSettings, Resolved
    from monkey.backends.plugin.manifest import ManifestError, load_manifest

    target = args.target
    path = Path(target).expanduser()
    if "/" in target or target.endswith((".yaml", ".yml")) or (path.exists() and target not in ctx.catalog.plugins):
        try:
            manifest = load_manifest(path, source="path")
        except ManifestError as exc:
            print(_shown(f"FAIL manifest: {exc}"))
            return 1
        raw = ctx.config.plugins.get(manifest.name) or {}
        import msgspec

        try:
            settings = msgspec.convert(raw, PluginSettings)
        except msgspec.ValidationError as exc:
            print(_shown(f"FAIL settings: [plugins.{manifest.name}]: {exc}"))
            return 1
        resolved = Resolved(name=manifest.name, manifest=manifest, settings=settings, description=manifest.description)
    else:
        broken = [p for p in ctx.catalog.problems if f"/{target}/" in p]
        try:
            resolved = ctx.resolve(target)
        except PluginError as exc:
            print(_shown(f"FAIL manifest: {broken[0] if broken else exc}"))
            return 1
        manifest = resolved.manifest
    print(
        _shown(
            f"ok   manifest {manifest.path}: {manifest.name} {manifest.version}, protocol {manifest.protocol}, "
            f"capabilities {', '.join(manifest.capabilities) or 'none'}"
        )
    )
    for warning in manifest.warnings:
        print(_shown(f"warn {warning}"))
    from monkey.backends.plugin.backend import PluginBackend

    try:
        backend = PluginBackend(resolved, workspace=ctx.workspace, handshake_timeout=args.timeout)
    except PluginError as exc:
        print(_shown(f"FAIL env: {exc}"))
        return 1
    from monkey.backends.plugin.host import PluginHost

    host = PluginHost(resolved)
    try:
        info = await host.handshake(timeout=args.timeout)
    except BackendError as exc:
        step = host.stage or "agent.init"
        if step == "agent.available":
            print(_shown(f"ok   agent.init: name {host.info.name or '?'}, model {host.info.model or '?'}"))
        said = f"not available: {host.info.reason}" if exc.kind == "unavailable" else exc.message
        print(_shown(f"FAIL {step}: {said}"))
        return 1
    finally:
        await host.close()
    print(
        _shown(
            f"ok   agent.init: name {info.name or '?'}, model {info.model or '?'}, capabilities "
            f"{', '.join(info.capabilities) or 'none'}"
        )
    )
    print("ok   agent.available: available")
    if args.run is None:
        return 0
    return await _smoke(backend, args.run)


async def _smoke(backend: Any, prompt: str) -> int:
    """One ``agent.run`` of ``prompt`` with no tools offered; a tool asked for anyway is refused."""
    from monkey.backends.base import BackendError
    from monkey.events import MessageCompleted, Raw, TextDelta, Usage
    from monkey.messages import Message, ModelRequest

    messages = [Message(role="user", content=prompt)]
    text: list[str] = []
    refused = 0
    try:
        while True:
            request = ModelRequest(system="", messages=list(messages), tools=[], session_id="validate")
            done: MessageCompleted | None = None
            async for event in backend.stream(request):
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, MessageCompleted):
                    done = event
                elif isinstance(event, Usage):
                    print(f"ok   usage: {event.input_tokens} in, {event.output_tokens} out")
                elif isinstance(event, Raw):
                    print(_shown(f"warn unknown notification: {json.dumps(event.data)[:200]}"))
            if done is None or not done.tool_calls or refused >= 5:
                break
            call = done.tool_calls[0]
            refused += 1
            print(_shown(f"warn the plugin asked for {call.name}, which was not run (a smoke run offers no tools)"))
            messages += [
                Message(role="assistant", content=done.text, tool_calls=[call]),
                Message(
                    role="tool",
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=True,
                    content="not run: `monkey plugins validate` runs no tools",
                ),
            ]
    except BackendError as exc:
        print(_shown(f"FAIL agent.run: {exc.message}"))
        return 1
    finally:
        await backend.aclose()
    said = "".join(text).strip()
    print(_shown(f"ok   agent.run: {len(said)} characters of text" + (f": {said[:200]}" if said else "")))
    return 0
