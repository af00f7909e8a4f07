"""Configuration: defaults < user file < project ``.monkey/config.toml`` < flags.

The user file is ``config.toml`` in the monkey home (``MONKEY_HOME``, else the platform's
data directory for monkey). Nothing is read at import time; :func:`load_config` does it.

A project file comes with the repository, so it may be written by someone else: its
``approvals.allow`` rules are ignored unless the user's own file sets
``approvals.trust_project = true`` (deny rules always apply).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

from monkey.config_scope import (  # noqa: F401  re-exported: monkey.config.USER_ONLY_KEYS and the rest
    EXECUTES_FILES,
    UNTRUSTED_KEYS,
    USER_ONLY_KEYS,
    USER_ONLY_SECTIONS,
    plugin_backends,
    untrusted_part,
    executes_files,
)

__all__ = [
    "Config",
    "AgentConfig",
    "BudgetConfig",
    "SubagentsConfig",
    "ShellConfig",
    "ApprovalConfig",
    "LocalConfig",
    "ContextConfig",
    "UIConfig",
    "WorkflowConfig",
    "CheckpointConfig",
    "BackendConfig",
    "AnthropicConfig",
    "OpenAIConfig",
    "PriceConfig",
    "ConfigError",
    "monkey_home",
    "history_path",
    "load_config",
    "toml_file",
]


class ConfigError(Exception):
    """A config file that cannot be read or does not fit the schema."""


class AgentConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[agent]``: which backend and model, and the loop's limits."""

    backend: str = ""
    """``scripted``, ``local``, ``anthropic`` ...; empty means choose automatically."""
    model: str = ""
    max_iterations: int = 20
    max_repeats: int = 3
    """The same tool call this many times in a row stops the loop."""


class BudgetConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[budget]``: what a run may spend (0: no limit; see :mod:`monkey.agent.budget`).

    ``max_turns`` counts monkey's model responses; ``[claude_code] max_turns`` is passed to the
    Claude Code CLI and bounds its own turns inside one of them."""

    max_turns: int = 0
    max_budget_usd: float = 0.0
    max_tokens: int = 0
    """Input plus output tokens, cumulative."""
    max_wall: float = 0.0
    """Seconds."""
    scope: str = "session"
    """``session``: a resumed session's budget counts its earlier runs too; ``run``: each run afresh."""


class SubagentsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[subagents]``: limits of delegation with the ``task`` tool."""

    max_depth: int = 2
    """How deep sub-agents may nest (1 to 5): a child at this depth is not offered ``task``."""
    max_parallel: int = 4
    """Sub-agents running at once in one run."""
    max_per_turn: int = 8
    """Sub-agents one agent may start in one turn."""


class ShellConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[shell]``: limits of ``shell_execute``."""

    timeout: float = 10.0
    max_timeout: float = 600.0
    output_limit: int = 30_000
    sandbox: str = "auto"
    """``auto``, ``bubblewrap``, ``landlock`` or ``off`` (:mod:`monkey.tools.sandbox`); the user's file only."""
    sandbox_network: bool = False
    """Whether sandboxed commands may use the network; the user's file only."""
    trusted_commands: str = "sandbox"
    """Where the commands monkey runs for the person (hooks, ``[workflow] verify``) run: ``sandbox``, like
    the model's (their inputs are in the workspace the model writes), or ``outside``; the user's file only."""


class ApprovalConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[approvals]``: rules like ``"file_edit"`` or ``"shell_execute(git status)"``."""

    allow: list[str] = []
    deny: list[str] = []
    trust_project: bool = False
    read_only: bool = True
    """Commands that only read (``ls``, ``git status``, ``sed -n 1,5p``...) run without asking."""
    read_only_extra: list[str] = []
    """More read-only commands, as command prefixes (``"make -n"``)."""
    mode: str = ""
    """The permission mode sessions start in (``default``, ``accept-edits``, ``plan``, ``auto``);
    a project file may not choose ``auto``."""


class LocalConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[local]``: the embedded llama.cpp model."""

    model_path: str = ""
    n_ctx: int = 8192
    max_tokens: int = 1024
    temperature: float = 0.2
    seed: int = -1
    """Sampling seed; -1 picks a new one for every process (set one to reproduce a run)."""


class ContextConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[context]``: the context window and when to compact it."""

    window: int = 0
    """The model's window in tokens; 0 means known from the backend or the model's name."""
    compact_at: float = 0.8
    """Compact the conversation when a request takes this fraction of the window."""
    keep_tool_results: int = 3
    """Tool results always sent in full; older ones become a one-line placeholder under pressure."""
    policies: list[str] = msgspec.field(
        default_factory=lambda: [
            "compress_failed_attempts",
            "summarize_subagent_chatter",
            "drop_completed_tool_calls",
            "elide_tool_results",
            "compact",
        ]
    )
    """The context policies run before each model call, in order (see :mod:`monkey.context.policies`)."""
    keep_tool_calls: int = 8
    """``drop_completed_tool_calls``: the newest tool interactions always sent in full."""
    keep_tool_tokens: int = 20_000
    """``drop_completed_tool_calls``: at most this many tokens of tool output sent in full."""
    policy_step: int = 4
    """How many nodes an editing policy's boundary moves at once (so the prompt cache is reused)."""


class UIConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[ui]``: how the app calls the person back when it needs them."""

    bell: bool = True
    """Ring the terminal's bell when an approval waits and when a long turn ends."""
    title: bool = True
    """Say it in the terminal's title too (``monkey · approval needed · proj``)."""
    long_turn: float = 10.0
    """Seconds: a turn at least this long rings when it ends."""


class NotifyConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[notify]``: notifications off the terminal when an approval waits or a long turn ends
    (see :mod:`monkey.notify`)."""

    terminal: Literal["auto", "osc9", "osc777", "off"] = "auto"
    """The terminal's own notification: ``auto`` where the terminal is known to show one."""
    desktop: Literal["auto", "on", "off"] = "auto"
    """``notify-send``: ``auto`` where no terminal notification is known and a display is there."""
    url: str = ""
    """A webhook (an ntfy topic URL, or an endpoint taking JSON); empty: none. Your own config only."""
    format: Literal["ntfy", "json"] = "ntfy"
    """How the webhook is sent: ntfy's (the line as the body, a ``Title`` header) or one JSON object."""
    headers: dict[str, str] = {}
    """Headers of the webhook request (``Authorization`` for a protected topic). Your own config only."""
    on: list[Literal["approval", "turn_done"]] = msgspec.field(default_factory=lambda: ["approval", "turn_done"])
    """What notifies: an approval waiting, a long turn ending (``[ui] long_turn`` says how long)."""


class WorkflowConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[workflow]``: the Think/Plan/Do/Reflect workflow (``--workflow tpdr``, ``/workflow tpdr``)."""

    verify: str = ""
    """A command Reflect runs to check the result (``pytest -q``); its failure goes back to the next Plan."""
    verify_retries: int = 2
    """How many times a failed verify command is fed back to a new Plan before the workflow gives up."""
    max_iterations: int = 3
    """Plan/Do/Reflect rounds at most."""


class BackendConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[backend]``: the primary backend, the ones to fall back to, and retries."""

    primary: str = ""
    fallbacks: list[str] = []
    """Tried in order when the primary fails for good (e.g. ``["openai", "local"]``)."""
    max_retries: int = 4
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0


class PriceConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """US dollars per million tokens of one model."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None


class ApiConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What ``[anthropic]`` and ``[openai]`` share: a model API reached over HTTP."""

    DEFAULT_KEY_ENV: ClassVar[str] = ""

    model: str = ""
    base_url: str = ""
    api_key_env: str = ""
    """The environment variable that holds the API key."""
    max_tokens: int = 4096
    timeout: float = 600.0
    prices: dict[str, PriceConfig] = {}

    @property
    def key_env(self) -> str:
        """The variable to read the key from (the section's default when left empty)."""
        return self.api_key_env or self.DEFAULT_KEY_ENV


class AnthropicConfig(ApiConfig, kw_only=True, forbid_unknown_fields=True):
    """``[anthropic]``: the Anthropic API."""

    DEFAULT_KEY_ENV: ClassVar[str] = "ANTHROPIC_API_KEY"

    api_key_env: str = "ANTHROPIC_API_KEY"
    api_key: str = ""
    """The key itself, as ``/login`` stores it in the user's own ``config.toml`` (mode 0600); the
    variable wins when it is set. Only the user's file may set it."""
    max_tokens: int = 8192
    thinking_budget: int = 0
    """Tokens of extended thinking per call; 0 turns thinking off."""
    prompt_cache: bool = True


class OpenAIConfig(ApiConfig, kw_only=True, forbid_unknown_fields=True):
    """``[openai]``: an OpenAI-compatible server (OpenAI, Ollama, LM Studio, vLLM, llama.cpp)."""

    DEFAULT_KEY_ENV: ClassVar[str] = "OPENAI_API_KEY"

    api_key_env: str = "OPENAI_API_KEY"
    images: bool = True
    """The model reads images (a vision model): a person's ``@shot.png`` and the images tools give back
    go to it; ``false`` for a text-only model (each is then replaced by a line saying so)."""


class ExternalAgentConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What ``[claude_code]`` and ``[codex]`` share: an agent CLI run as the backend."""

    executable: str = ""
    model: str = ""
    extra_args: list[str] = []
    env: dict[str, str] = {}
    """Passed to the CLI after its environment is scrubbed of ambient credentials and endpoints."""
    idle_timeout: float = 600.0
    """Seconds without output before the CLI is stopped."""
    timeout: float = 3600.0
    """Seconds one run may take in all."""
    max_line_bytes: int = 8 << 20
    """Bytes one line of the CLI's output may have; a longer line stops the run with an error."""
    check_version: bool = True


class ClaudeCodeConfig(ExternalAgentConfig, kw_only=True, forbid_unknown_fields=True):
    """``[claude_code]``: Claude Code (``claude -p``) as the backend."""

    executable: str = "claude"
    permission_mode: str = ""
    """Empty: ``default`` (Claude Code asks, and monkey's permission engine answers); ``plan`` also
    works. Modes that let Claude Code run tools without asking are refused."""
    append_system_prompt: str = ""
    max_turns: int = 0
    mcp_config: str = ""
    allowed_tools: list[str] = []


class CodexConfig(ExternalAgentConfig, kw_only=True, forbid_unknown_fields=True):
    """``[codex]``: the Codex CLI (``codex app-server``) as the backend."""

    executable: str = "codex"
    sandbox: str = "workspace-write"


class CheckpointConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[checkpoints]``: the shadow repository that makes every change undoable."""

    max_file_size: int = 50 * 1024 * 1024
    """Bytes; changing a larger file needs a person's approval, and shell snapshots skip it."""


class InstructionsConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[instructions]``: the ``AGENTS.md`` files the model follows (see :mod:`monkey.extensions.instructions`)."""

    files: list[str] = msgspec.field(default_factory=lambda: ["AGENTS.md", "CLAUDE.md", "GEMINI.md"])
    """The names looked for in each folder, in order of preference (the first found is read)."""
    max_bytes: int = 32 * 1024
    """Bytes of instructions at most; what does not fit is left out, with a notice."""


class McpConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[mcp]``: how MCP tools' results reach the model (servers: ``[mcp_servers.NAME]``)."""

    result_limit: int = 100_000
    """Characters of one MCP tool result given to the model; the whole is saved in the monkey home."""


class LoggingConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[logging]`` (your own config only): where monkey's log records go (see :mod:`monkey.logs`)."""

    file: str = ""
    """A JSON-lines log file (``--log-file`` overrides it); empty: none."""
    max_bytes: int = 10 << 20
    """The file is rotated at this size."""
    backups: int = 3
    """Rotated files kept."""
    handlers: list[str] = []
    """More handlers by import path, ``package.module:factory``."""


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The whole configuration."""

    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    budget: BudgetConfig = msgspec.field(default_factory=BudgetConfig)
    subagents: SubagentsConfig = msgspec.field(default_factory=SubagentsConfig)
    shell: ShellConfig = msgspec.field(default_factory=ShellConfig)
    approvals: ApprovalConfig = msgspec.field(default_factory=ApprovalConfig)
    local: LocalConfig = msgspec.field(default_factory=LocalConfig)
    context: ContextConfig = msgspec.field(default_factory=ContextConfig)
    checkpoints: CheckpointConfig = msgspec.field(default_factory=CheckpointConfig)
    backend: BackendConfig = msgspec.field(default_factory=BackendConfig)
    anthropic: AnthropicConfig = msgspec.field(default_factory=AnthropicConfig)
    openai: OpenAIConfig = msgspec.field(default_factory=OpenAIConfig)
    claude_code: ClaudeCodeConfig = msgspec.field(default_factory=ClaudeCodeConfig)
    codex: CodexConfig = msgspec.field(default_factory=CodexConfig)
    ui: UIConfig = msgspec.field(default_factory=UIConfig)
    notify: NotifyConfig = msgspec.field(default_factory=NotifyConfig)
    workflow: WorkflowConfig = msgspec.field(default_factory=WorkflowConfig)
    instructions: InstructionsConfig = msgspec.field(default_factory=InstructionsConfig)
    logging: LoggingConfig = msgspec.field(default_factory=LoggingConfig)
    hooks: dict[str, list[dict[str, Any]]] = {}
    """``[[hooks.EVENT]]`` tables (see :mod:`monkey.extensions.hooks`); the user's own file's only."""
    mcp: McpConfig = msgspec.field(default_factory=McpConfig)
    mcp_servers: dict[str, Any] = {}
    """MCP servers by name; read and checked by :mod:`monkey.mcp_client.config` (which also knows
    which file each came from)."""
    plugins: dict[str, Any] = {}
    """``[plugins.NAME]``: settings of an agent plugin; checked by :mod:`monkey.backends.plugin.discovery`."""
    agents: dict[str, Any] = {}
    acp_agents: dict[str, Any] = {}
    """``[acp_agents.NAME]``: ACP agents for ``--backend acp:NAME`` (``command``, ``args``, ``env``, ``mode``...);
    checked by :mod:`monkey.backends.acp_client.agents`."""
    """``[agents.NAME]``: aliases of agent plugins (``extends``, ``env``...); see :mod:`monkey.backends.plugin.discovery`."""
    lsp: dict[str, Any] = {}
    """``[lsp.NAME]``: language servers asked after file edits (``command``, ``extensions``, ``language``, ``timeout``,
    ``enabled``); checked by :mod:`monkey.lsp.servers`. A project's only in a trusted folder (it names a program)."""
    notices: list[str] = []
    """Things worth telling the user about how the config was read."""
    untrusted: list[str] = []
    """Keys of the project file left out because the folder is not trusted."""


def monkey_home() -> Path:
    """The monkey home: ``MONKEY_HOME`` or the platform's data directory for monkey."""
    env = os.environ.get("MONKEY_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("monkey", appauthor=False))


def history_path(workspace: Path, prefix: str = "") -> Path:
    """The input history of one workspace under the monkey home (``prefix`` tells front ends apart)."""
    import hashlib

    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    return monkey_home() / "history" / f"{prefix}{digest}.txt"


def toml_file(path: Path) -> dict[str, Any] | None:
    """The TOML file at ``path``; None when there is none (``tomllib`` is imported only for a file).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not TOML, or not UTF-8 (:class:`UnicodeDecodeError`).
    """
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return None
    with fh:
        import tomllib

        return tomllib.load(fh)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = toml_file(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return data if data is not None else {}


def user_logging(home: Path | None = None) -> LoggingConfig:
    """``[logging]`` of the user's own config (raises :class:`ConfigError` when it is bad)."""
    path = (home if home is not None else monkey_home()) / "config.toml"
    section = _read_toml(path).get("logging", {})
    try:
        return msgspec.convert(section, LoggingConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: [logging]: {exc}") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _validate(data: dict[str, Any], origin: str) -> None:
    try:
        msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{origin}: {exc}") from None


SANDBOX_MODES = ("auto", "bubblewrap", "landlock", "off")
"""The values of ``shell.sandbox`` (see :mod:`monkey.tools.sandbox`)."""


def _mode_name(name: str, origin: Path) -> str:
    from monkey.modes import ModeError, parse_mode

    try:
        return parse_mode(name)
    except ModeError as exc:
        raise ConfigError(f"{origin}: approvals.mode: {exc}") from None


def load_config(workspace: Path, *, home: Path | None = None, trusted: bool | None = None) -> Config:
    """Read the user file and the project file of ``workspace`` into one :class:`Config`.

    The project file counts in full only in a trusted folder (``trusted``: decided by the
    caller, else by :mod:`monkey.trust` or ``approvals.trust_project`` in the user's file);
    elsewhere only its deny rules and ``[ui]`` apply, and :attr:`Config.untrusted` names the
    keys left out.
    """
    from monkey.trust import is_trusted

    home = home if home is not None else monkey_home()
    user_path = home / "config.toml"
    project_path = workspace / ".monkey" / "config.toml"
    user = _read_toml(user_path)
    project = _read_toml(project_path)
    _validate(user, str(user_path))
    _validate(project, str(project_path))
    notices: list[str] = []
    if trusted is None:
        trusted = bool(user.get("approvals", {}).get("trust_project", False)) or is_trusted(workspace, home)
    project.get("approvals", {}).pop("trust_project", None)  # only the user's own file says that
    user_only = [
        f"{section}.{key}"
        for section, keys in USER_ONLY_KEYS.items()
        for key in keys
        if isinstance(project.get(section), dict) and project[section].pop(key, None) is not None
    ]
    user_only += [f"[{section}]" for section in USER_ONLY_SECTIONS if project.pop(section, None) is not None]
    user_only += plugin_backends(project)
    extra = project.get("approvals", {}).get("read_only_extra")
    if isinstance(extra, list):
        runs = [str(e) for e in extra if executes_files(str(e))]
        project["approvals"]["read_only_extra"] = [e for e in extra if not executes_files(str(e))]
        user_only += [f"approvals.read_only_extra {e!r}" for e in runs]
    if user_only:
        notices.append(
            f"ignored {', '.join(user_only)} in {project_path}: only your own config.toml sets that "
            "(it says where a credential goes or which program runs)"
        )
    ignored: list[str] = []
    if not trusted:
        project, ignored = untrusted_part(project)
        # what was ignored (Config.untrusted) is said by the session with the rest the folder holds
    user_approvals = user.get("approvals", {})
    project_approvals = project.get("approvals", {})
    allow = list(user_approvals.get("allow", [])) + list(project_approvals.get("allow", []))
    deny = list(user_approvals.get("deny", [])) + list(project_approvals.get("deny", []))
    merged = _merge(user, project)
    hooks: dict[str, list[Any]] = {}  # the user's hooks only (a project's were dropped above)
    for source in (user.get("hooks", {}),):
        for event, groups in source.items() if isinstance(source, dict) else []:
            hooks.setdefault(event, []).extend(groups if isinstance(groups, list) else [groups])
    merged["hooks"] = hooks
    mode = str(user_approvals.get("mode", ""))
    project_mode = str(project_approvals.get("mode", ""))
    if project_mode and _mode_name(project_mode, project_path) != "auto":
        mode = project_mode
    elif project_mode:
        notices.append(
            f'ignored approvals.mode = "auto" in {project_path}: only your own config may start '
            "sessions without approvals"
        )
    merged["approvals"] = {
        "allow": allow,
        "deny": deny,
        "trust_project": bool(trusted),
        "mode": _mode_name(mode, user_path) if mode else "",
        "read_only": project_approvals.get("read_only", user_approvals.get("read_only", True)),
        "read_only_extra": [*user_approvals.get("read_only_extra", []), *project_approvals.get("read_only_extra", [])],
    }
    config = msgspec.convert(merged, Config)
    if config.shell.sandbox not in SANDBOX_MODES:
        raise ConfigError(
            f"{user_path}: shell.sandbox must be one of {', '.join(SANDBOX_MODES)}, got {config.shell.sandbox!r}"
        )
    if config.shell.trusted_commands not in ("sandbox", "outside"):
        raise ConfigError(
            f'{user_path}: shell.trusted_commands must be "sandbox" or "outside", got {config.shell.trusted_commands!r}'
        )
    config.notices = notices
    config.untrusted = ignored
    return config
