"""Finding agent plugins, and resolving a name (a plugin or an alias) to what runs.

Plugins are folders holding a ``plugin.yaml``, looked for (later overriding earlier, by the
manifest's ``name``) in:

- the plugins shipped with monkey (``monkey/backends/plugin/examples/``: the OpenAI-compatible agent);
- ``plugins/`` in the monkey home;
- ``.monkey/plugins/`` of the project, in a trusted folder only (a repository's plugin is a
  program someone else wrote: it runs only once the person trusts the folder).

monkey's config adds, per plugin, ``[plugins.NAME]`` (``env``, ``config`` sent with
``agent.init``, ``model``, and the host's limits) and aliases, ``[agents.NAME]`` with
``extends`` (a plugin or another alias), ``description``, ``env``, ``config`` and ``model``:
an alias is its plugin with those values on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from monkey.backends.plugin.manifest import MANIFEST, Manifest, ManifestError, load_manifest

__all__ = [
    "AliasSettings",
    "Catalog",
    "PluginError",
    "PluginSettings",
    "Resolved",
    "builtin_root",
    "discover",
    "plugin_roots",
    "resolve",
]

PROJECT_DIR = ".monkey/plugins"


class PluginError(Exception):
    """A plugin that cannot be found, configured or run; the message says why in one line."""


class PluginSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[plugins.NAME]`` in monkey's config."""

    env: dict[str, str] = {}
    """Set for the plugin after the environment is scrubbed (``${VAR}`` takes monkey's own variable)."""
    config: dict[str, Any] = {}
    """Sent as ``agent.init``'s ``config``."""
    model: str = ""
    """Sent as ``config.model`` (``--model`` overrides it)."""
    idle_timeout: float = 600.0
    """Seconds the plugin may print nothing (while it is not waiting for monkey) before it is stopped."""
    timeout: float = 3600.0
    """Seconds one run may take in all."""
    grace: float = 2.0
    """Seconds between closing its stdin (or SIGTERM) and the next step of stopping it."""
    max_line_bytes: int = 8 << 20
    """Bytes one JSON-RPC message may have; a longer line ends the run."""


class AliasSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[agents.NAME]``: a plugin under another name, with other values."""

    extends: str
    description: str = ""
    env: dict[str, str] = {}
    config: dict[str, Any] = {}
    model: str = ""


@dataclass
class Catalog:
    """The plugins found, by name, and one line per manifest that could not be used."""

    plugins: dict[str, Manifest] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Plugins overridden by a later folder's plugin of the same name."""


@dataclass
class Resolved:
    """What ``plugin:NAME`` runs: the manifest and the settings for it."""

    name: str
    """As the person named it (an alias or the plugin)."""
    manifest: Manifest
    settings: PluginSettings
    description: str = ""
    chain: list[str] = field(default_factory=list)
    """The aliases followed, first the one named."""


def builtin_root() -> Path:
    """The folder of the plugins shipped with monkey."""
    return Path(__file__).resolve().parent / "examples"


def plugin_roots(home: Path, workspace: Path | None, trusted: bool) -> list[tuple[Path, str]]:
    """The folders plugins are looked for in, with their source, lowest precedence first."""
    roots = [(builtin_root(), "built-in"), (home / "plugins", "user")]
    if workspace is not None and trusted:
        roots.append((workspace / PROJECT_DIR, "project"))
    return roots


def discover(home: Path, workspace: Path | None, trusted: bool) -> Catalog:
    """Every plugin of :func:`plugin_roots`; a broken manifest is a problem line, not an error."""
    catalog = Catalog()
    for root, source in plugin_roots(home, workspace, trusted):
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        seen: dict[str, Path] = {}
        for folder in folders:
            if not (folder / MANIFEST).is_file():
                continue
            try:
                manifest = load_manifest(folder / MANIFEST, source=source)
            except ManifestError as exc:
                catalog.problems.append(str(exc))
                continue
            if manifest.name in seen:
                catalog.problems.append(
                    f"{manifest.path}: name: {manifest.name!r} is also the name of "
                    f"{seen[manifest.name]} (this one is left out)"
                )
                continue
            seen[manifest.name] = manifest.path
            if (old := catalog.plugins.get(manifest.name)) is not None:
                catalog.notes.append(f"plugin {manifest.name} of {manifest.path} overrides {old.path}")
            catalog.plugins[manifest.name] = manifest
    if not trusted and workspace is not None and (workspace / PROJECT_DIR).is_dir():
        catalog.notes.append(
            f"{workspace / PROJECT_DIR} is left out: this folder is not trusted (`monkey trust {workspace}` trusts it)"
        )
    return catalog


def _section(table: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    raw = table.get(name)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise PluginError(f"[{where}.{name}] must be a table")
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise PluginError(f"[{where}.{name}]: {exc}") from None


def resolve(name: str, catalog: Catalog, plugins: Mapping[str, Any], agents: Mapping[str, Any]) -> Resolved:
    """``name`` (a plugin or an ``[agents]`` alias) with its settings merged; raises :class:`PluginError`."""
    chain: list[str] = []
    layers: list[AliasSettings] = []
    current = name
    while current not in catalog.plugins:
        alias = _section(agents, current, AliasSettings, "agents")
        if alias is None:
            known = sorted({*catalog.plugins, *agents})
            hint = f"; known: {', '.join(known)}" if known else "; no plugins are installed"
            via = f" (named by [agents.{chain[-1]}] extends)" if chain else ""
            raise PluginError(f"no plugin or agent alias named {current!r}{via}{hint}")
        if current in chain:
            raise PluginError(
                f"[agents.{name}]: the aliases extend each other in a circle: " + " -> ".join([*chain, current])
            )
        chain.append(current)
        layers.append(alias)
        current = alias.extends
    manifest = catalog.plugins[current]
    settings = _section(plugins, current, PluginSettings, "plugins") or PluginSettings()
    description = manifest.description
    for alias in reversed(layers):  # the alias named last in the chain is closest to the plugin
        settings = msgspec.structs.replace(
            settings,
            env={**settings.env, **alias.env},
            config={**settings.config, **alias.config},
            model=alias.model or settings.model,
        )
        description = alias.description or description
    return Resolved(name=name, manifest=manifest, settings=settings, description=description, chain=chain)
