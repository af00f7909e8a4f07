"""Every slash command, defined once: name, usage, help, and what it does.

A command works on a :class:`Host` (the running conversation as a front end holds it) and
answers with :mod:`replies <monkey.session.replies>`; events it makes (an undo, a backend
switch, a compaction) go through :meth:`Host.emit`, which stores them before any front end
shows them. :func:`run_command` parses a typed line and runs the command it names;
:data:`COMMANDS` is the list every front end completes and documents from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monkey.session.process_commands import processes_command
from monkey.session.stats_command import stats_command
from monkey.session.replies import (
    Cleared,
    CopyText,
    Help,
    InstructionsChanged,
    ModeChanged,
    Note,
    Quit,
    Reply,
    SendPrompt,
    StartWorkflow,
    ToggleEvents,
)

from monkey.session.host import BUSY, Host
from monkey.session.stored_commands import export, fork, rename, resume, sessions
from monkey.session.undo_commands import checkpoints_command, describe_undo, undo_command
from monkey.session.worktree_command import worktree

if TYPE_CHECKING:
    from monkey.modes import Mode
    from monkey.events import Event

__all__ = [
    "Host",
    "Command",
    "REGISTRY",
    "COMMANDS",
    "run_command",
    "last_answer",
    "copied_note",
    "describe_undo",
    "switch_mode",
    "BUSY",
]

Run = Callable[[Host, str], Awaitable[list[Reply]]]


@dataclass(frozen=True)
class Command:
    """One slash command."""

    name: str
    help: str
    run: Run
    usage: str = ""
    """Arguments, as typed after the name (``[--force]``)."""
    aliases: tuple[str, ...] = ()


# -- the commands ---------------------------------------------------------------------


async def _help(host: Host, rest: str) -> list[Reply]:
    return [Help([(c.name, c.help) for c in REGISTRY])]


async def _exit(host: Host, rest: str) -> list[Reply]:
    return [Quit()]


async def _events(host: Host, rest: str) -> list[Reply]:
    return [ToggleEvents()]


async def _clear(host: Host, rest: str) -> list[Reply]:
    if host.working:
        return [Note(BUSY, "warning")]
    from monkey.events import ConversationCleared

    agent = host.agent
    cleared = len(agent.messages)
    agent.clear()
    if cleared:  # stored, so a resume or a fork after it starts afresh too (the list is empty by then)
        await host.emit(ConversationCleared(session_id=agent.session_id, messages=cleared))
    if host.recorder is not None:
        host.recorder.reconcile()
    return [Cleared(), Note("(new conversation)")]


async def _compact(host: Host, rest: str) -> list[Reply]:
    agent = host.agent
    if host.working:
        return [Note(BUSY, "warning")]
    if agent.context is None:
        return [Note("this agent has no context manager", "warning")]
    made: list[Event] = []
    result = await agent.context.compact(agent, made.append, trigger="manual")
    for event in made:
        await host.emit(event)
    if host.recorder is not None:
        host.recorder.reconcile()
        if agent.started:
            await host.recorder.flush()
    if result is None:
        return [] if any(e.type == "error" for e in made) else [Note("nothing to compact yet")]
    return [
        Note(f"compacted {result.messages_compacted} messages: {result.tokens_before} → {result.tokens_after} tokens")
    ]


async def _approvals(host: Host, rest: str) -> list[Reply]:
    from monkey.config import monkey_home
    from monkey.permissions.user_rules import remove_rule, saved_rules

    policy = host.agent.policy
    home = monkey_home()
    grants = list(policy.grants.items())
    kept = saved_rules(home) if policy.save_rules is not None else []
    words = rest.split()
    if len(words) == 2 and words[0] == "revoke":
        n = int(words[1]) if words[1].isdigit() else 0
        if 0 < n <= len(grants):
            key, what = grants[n - 1]
            policy.revoke(key)
            return [Note(f"revoked for this session: {what}")]
        if 0 < n - len(grants) <= len(kept):
            rule = kept[n - len(grants) - 1]
            try:
                remove_rule(home, rule)
            except OSError as exc:
                return [Note(f"cannot change your config: {exc}", "error")]
            policy.forget_rule(rule)
            return [Note(f"removed {rule} from {home / 'config.toml'}")]
        return [Note(f"no approval number {words[1]}; /approvals lists them", "warning")]
    if rest:
        return [Note("usage: /approvals, or /approvals revoke N", "warning")]
    if not grants and not kept:
        return [Note("no approvals granted in this session, and none kept in your config")]
    lines = ["approvals (/approvals revoke N drops one):"]
    if grants:
        lines.append("for this session:")
        lines += [f"  {i}. {what}" for i, (_, what) in enumerate(grants, 1)]
    if kept:
        lines.append(f"for good, in {home / 'config.toml'} [approvals] allow:")
        lines += [f"  {i}. {rule}" for i, rule in enumerate(kept, len(grants) + 1)]
    return [Note("\n".join(lines))]


async def _memory(host: Host, rest: str) -> list[Reply]:
    instructions = host.agent.options.instructions
    verb, _, arg = rest.strip().partition(" ")
    if verb in ("add", "remove"):
        if host.working:
            return [Note(BUSY, "warning")]
        if instructions is None or instructions.memory_path is None:
            return [
                Note(
                    "this folder is not trusted, so it has no project memory (`monkey trust PATH` trusts it)", "warning"
                )
            ]
        try:
            if verb == "add" and arg.strip():
                said = instructions.remember(arg)
            elif verb == "remove" and arg.strip().isdigit():
                said = instructions.forget(int(arg))
            else:
                return [Note("usage: /memory add TEXT, or /memory remove N", "warning")]
        except IndexError as exc:
            return [Note(str(exc), "warning")]
        except OSError as exc:
            return [Note(f"cannot change the project memory: {exc.strerror or exc}", "error")]
        host.agent.refresh_system_prompt()
        return [Note(said), InstructionsChanged([f.shown for f in instructions.files])]
    if rest:
        return [Note("usage: /memory, /memory add TEXT, or /memory remove N", "warning")]
    if instructions is None or not instructions.files:
        names = ", ".join(instructions.names) if instructions is not None else "AGENTS.md"
        lines = [
            f"no instruction files: the model follows none ({names} in the monkey home, or from the "
            "repository root down to the workspace in a trusted folder)"
        ]
    else:
        lines = ["instruction files the model follows, outermost first:"]
        lines += [
            f"  {f.shown}{f' (imported by {f.imported_by})' if f.imported_by else ''}  {f.size} bytes"
            for f in instructions.files
        ]
    lines += [f"  note: {n}" for n in (instructions.notices if instructions is not None else [])]
    if instructions is not None and instructions.memory_path is not None:
        entries = instructions.memory_entries()
        lines.append(
            f"project memory ({len(entries)} line(s); /memory add TEXT, /memory remove N):"
            if entries
            else "project memory: empty (/memory add TEXT keeps a note for every session here)"
        )
        lines += [f"  {i}. {e.removeprefix('- ')}" for i, e in enumerate(entries, 1)]
    notes = host.agent.memory.entries
    if notes:
        lines.append(f"this session's working memory (the model's memory_write notes): {', '.join(notes)}")
    return [Note("\n".join(lines))]


async def _init(host: Host, rest: str) -> list[Reply]:
    from monkey.prompts import load_prompt

    if host.working:
        return [Note(BUSY, "warning")]
    prompt = load_prompt("init")
    if rest:
        prompt += f"\n\nThe person adds: {rest}"
    return [SendPrompt(prompt, "/init: asking the model to write AGENTS.md for this project")]


async def _skills(host: Host, rest: str) -> list[Reply]:
    skills = host.agent.options.skills
    if skills is None or not skills.by_name:
        return [
            Note(
                "no skills: put one in .monkey/skills/NAME/SKILL.md (a trusted project) or in "
                "skills/NAME/SKILL.md in the monkey home"
            )
        ]
    lines = ["skills (the model loads one when a task fits; /NAME [ARGUMENTS] runs one yourself):"]
    for skill in sorted(skills.by_name.values(), key=lambda s: s.name):
        mark = "" if skill.user_invocable else " (the model's only)"
        lines.append(f"  {skill.name} [{skill.source}]{mark} — {skill.description}")
    lines += [f"  note: {w}" for w in skills.warnings]
    return [Note("\n".join(lines))]


def _unknown(host: Host, name: str) -> str:
    """What an unknown ``/NAME`` says: that it is a skill of this untrusted project, when it is one."""
    from monkey.session.untrusted import untrusted_skill

    instructions = host.agent.options.instructions
    if (instructions is None or not instructions.trusted) and untrusted_skill(host.agent.workspace, name):
        return (
            f"{name} is a skill of this project, which is not trusted, so its skills are not used: "
            f"`monkey trust {host.agent.workspace}` turns them on (and what else it does: `monkey trust --help`)"
        )
    return f"unknown command {name}; /help lists them"


async def _run_skill(host: Host, name: str, rest: str) -> list[Reply] | None:
    """``/NAME ARGUMENTS`` for a skill the person may invoke: a turn with its instructions."""
    from monkey.extensions.skill_tool import skill_text
    from monkey.extensions.skills import SkillError

    skills = host.agent.options.skills
    skill = skills.get(name.removeprefix("/")) if skills is not None else None
    if skill is None:
        return None
    if not skill.user_invocable:
        return [Note(f"skill {skill.name} is for the model to load, not to run with /{skill.name}", "warning")]
    if host.working:
        return [Note(BUSY, "warning")]
    try:
        text = skill_text(skill, rest)
    except SkillError as exc:
        return [Note(str(exc), "error")]
    from monkey.extensions.skills import granted as skill_grants

    granted = host.agent.use_skill(skill)
    _, why = skill_grants(skill)
    shown = f"/{skill.name}: running skill {skill.name}" + (
        f" (allowed for this turn: {', '.join(granted)})" if granted else f" ({why})" if why else ""
    )
    return [SendPrompt(f"Use this skill for the task.\n\n{text}", shown)]


async def _hooks(host: Host, rest: str) -> list[Reply]:
    hooks = host.agent.options.hooks
    if not hooks:
        return [
            Note(
                "no hooks: add [[hooks.PreToolUse]] (or PostToolUse, UserPromptSubmit, Stop ...) with a "
                "matcher and commands to your config.toml"
            )
        ]
    return [Note("\n".join(["hooks (event [matcher] command):", *[f"  {line}" for line in hooks.listing()]]))]


async def _mode(host: Host, rest: str) -> list[Reply]:
    from monkey.modes import DESCRIPTIONS, MODES

    policy = host.agent.policy
    name = rest.strip()
    if not name:
        lines = [f"{'*' if m == policy.mode else ' '} {m:<13}{DESCRIPTIONS[m]}" for m in MODES]
        return [Note("permission modes (* is this session's; /mode NAME or Shift+Tab switches):\n" + "\n".join(lines))]
    return [await switch_mode(host, name)]


async def switch_mode(host: Host, name: str, *, by: str = "user") -> Note | ModeChanged:
    """Switch the mode named ``name`` (or ``next``): ``/mode``, Shift+Tab, and ``monkey web`` (``by="web"``),
    which never widens a session to ``auto`` it did not start in (only its own person does)."""
    from monkey.modes import ModeError, next_mode, parse_mode

    policy = host.agent.policy
    try:
        mode = next_mode(policy.mode, auto_allowed=policy.auto_allowed) if name == "next" else parse_mode(name)
    except ModeError as exc:
        return Note(str(exc), "warning")
    if mode == "auto" and by != "user" and not policy.auto_allowed:
        return Note(
            "auto mode is switched on only at the session's own terminal (/mode auto), or started with "
            "--no-approval or --mode auto",
            "warning",
        )
    return await _switch_mode(host, mode, by)


async def _switch_mode(host: Host, mode: Mode, by: str = "user") -> ModeChanged:
    """Switch the session's mode and store it (``mode_changed``: a resumed session goes on in it)."""
    from monkey.events import ModeChanged as ModeEvent

    policy = host.agent.policy
    previous = policy.mode
    said = policy.set_mode(mode)
    if mode != previous:
        await host.emit(ModeEvent(session_id=host.agent.session_id, mode=mode, previous=previous, by=by))
    return ModeChanged(mode, said)


async def _plan(host: Host, rest: str) -> list[Reply]:
    """``/plan [GOAL]``: plan mode (read-only), and with a goal, a turn that plans it."""
    replies: list[Reply] = []
    if host.agent.policy.mode != "plan":
        replies.append(await _switch_mode(host, "plan"))
    elif not rest:
        return [Note("already in plan mode: type the task to plan, or /plan GOAL (/mode default leaves it)")]
    if rest:
        if host.working:
            return [*replies, Note(BUSY, "warning")]
        replies.append(SendPrompt(rest, f"/plan: planning {rest}"))
    return replies


async def _switch(host: Host, name: str, rest: str) -> list[Reply]:
    from monkey.session.switch import switch_command

    if host.working:
        return [Note(BUSY, "warning")]
    result = await switch_command(host.agent, host.switcher, name, rest)
    if result.event is not None:
        await host.emit(result.event)
    return [Note("\n".join(result.lines), "info" if result.ok else "warning")]


async def _model(host: Host, rest: str) -> list[Reply]:
    return await _switch(host, "/model", rest)


async def _backend(host: Host, rest: str) -> list[Reply]:
    return await _switch(host, "/backend", rest)


async def _login(host: Host, rest: str) -> list[Reply]:
    """``/login KEY`` keeps an Anthropic API key in the user's config.toml; ``/login`` says how."""
    from monkey.config import monkey_home
    from monkey.session.login import login_help, store_key

    config = host.switcher.config
    key_env = config.anthropic.key_env
    if not rest:
        return [Note(login_help(monkey_home(), key_env))]
    try:
        path = await asyncio.to_thread(store_key, monkey_home(), rest.strip())
    except (ValueError, OSError) as exc:
        return [Note(f"the key was not stored: {exc}", "error")]
    config.anthropic.api_key = rest.strip()  # the switcher builds the next Anthropic backend with it
    said = f"key stored in {path} (readable only by you)"
    if host.switcher.env.get(key_env):
        said += f"; {key_env} is set and wins over it"
    return [Note(said + "; /backend anthropic uses it now, and new sessions do")]


def last_answer(messages) -> str:  # list[Message]
    """The text of the model's latest answer in ``messages`` (``""`` when there is none yet)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.content.strip():
            return message.content
    return ""


def copied_note(text: str, what: str) -> str:
    """What a front end says after copying ``text``."""
    lines = text.count("\n") + 1
    return f"copied {what} to the clipboard ({len(text)} characters, {lines} line{'s' if lines != 1 else ''})"


async def _copy(host: Host, rest: str) -> list[Reply]:
    text = last_answer(host.agent.messages)
    if not text:
        return [Note("nothing to copy yet: there is no answer in this conversation", "warning")]
    return [CopyText(text, "the last answer")]


async def _mcp(host: Host, rest: str) -> list[Reply]:
    """``/mcp``: the MCP servers, their status, tools and errors; ``reconnect NAME``, ``disable NAME``."""
    manager = host.agent.mcp
    words = rest.split()
    if words and (words[0] not in ("reconnect", "disable") or len(words) != 2):
        return [Note("usage: /mcp, /mcp reconnect NAME or /mcp disable NAME", "warning")]
    if manager is None:
        return [
            Note(
                "no MCP servers are configured (.mcp.json, mcp.json in the monkey home, "
                "[mcp_servers.NAME] or --mcp-config; see the README's MCP servers)"
            )
        ]
    if words:
        action, name = words
        if host.working:
            return [Note(BUSY, "warning")]
        try:
            said = await (manager.reconnect(name) if action == "reconnect" else manager.disable(name))
        except (TimeoutError, KeyError) as exc:
            return [Note(str(exc.args[0]) if exc.args else f"{name} did not answer in time", "warning")]
        return [Note(said)]
    lines = ["MCP servers (/mcp reconnect NAME, /mcp disable NAME):"]
    for view in manager.views():
        lines.append(
            f"{view.name} ({view.origin}): {view.status}, {len(view.tools)} tool{'s' if len(view.tools) != 1 else ''}"
            + (f" — {view.error}" if view.error else "")
        )
        if view.tools:
            lines.append("  " + ", ".join(view.tools))
        if view.changed:
            lines.append("  changed since approved (a person approves the next call): " + ", ".join(view.changed))
    lines += [f"note: {n}" for n in manager.notices if not n.startswith("MCP server ")]
    return [Note("\n".join(lines), "warning" if any(v.status == "failed" for v in manager.views()) else "info")]


async def _workflow(host: Host, rest: str) -> list[Reply]:
    """``/workflow NAME TASK``: run a workflow (``tpdr``) on the task, as a turn of this session."""
    from monkey.workflow import WORKFLOWS

    name, _, task = rest.partition(" ")
    if not name:
        return [
            Note(
                "workflows (/workflow NAME TASK runs one):\n"
                + "\n".join(f"  {n} — {what}" for n, what in WORKFLOWS.items())
            )
        ]
    if name not in WORKFLOWS:
        return [Note(f"unknown workflow {name!r}: expected one of {', '.join(WORKFLOWS)}", "warning")]
    if not task.strip():
        return [Note(f"usage: /workflow {name} TASK", "warning")]
    if host.working:
        return [Note(BUSY, "warning")]
    return [StartWorkflow(name, task.strip(), f"/workflow {name}: running it on {task.strip()}")]


REGISTRY: list[Command] = [
    Command("/help", "show the commands and keys", _help),
    Command("/undo", "undo the latest change monkey made", undo_command, "[--force]"),
    Command("/checkpoints", "browse this session's checkpoints", checkpoints_command, "[show N]"),
    Command("/sessions", "browse stored sessions", sessions),
    Command("/resume", "resume a stored session", resume, "[N|ID]"),
    Command("/rename", "give this session a title", rename, "TITLE"),
    Command("/fork", "go on in a new session with this conversation so far", fork),
    Command("/worktree", "go on in a new session in a new git worktree (branch monkey/NAME)", worktree, "[NAME]"),
    Command(
        "/export",
        "write this session as a Claude Code session file (claude --resume continues it)",
        export,
        "claude [--force]",
    ),
    Command("/model", "show or switch the model (/model NAME)", _model, "[NAME]"),
    Command("/backend", "list or switch backends (/backend NAME [MODEL])", _backend, "[NAME [MODEL]]"),
    Command("/login", "keep an Anthropic API key in your config.toml (or say how to set one)", _login, "[KEY]"),
    Command("/compact", "summarise older messages to free context", _compact),
    Command("/clear", "start a new conversation", _clear),
    Command("/events", "show or hide the events (the app's pane, the REPL's event lines)", _events),
    Command(
        "/approvals", "list approvals for the session and for good (/approvals revoke N)", _approvals, "[revoke N]"
    ),
    Command("/mode", "show or switch the permission mode (default, accept-edits, plan, auto)", _mode, "[NAME|next]"),
    Command("/plan", "plan mode (read-only): the model plans and asks you to approve its plan", _plan, "[GOAL]"),
    Command(
        "/workflow", "run a task as a workflow: tpdr (think, plan, do, reflect, until done)", _workflow, "[NAME TASK]"
    ),
    Command(
        "/memory",
        "the instruction files (AGENTS.md) and the project's memory; /memory add TEXT, /memory remove N",
        _memory,
    ),
    Command("/init", "ask the model to write an AGENTS.md for this project", _init, "[NOTES]"),
    Command("/skills", "list the skills (a skill runs with /NAME)", _skills),
    Command("/hooks", "list the hook commands that run at tool calls, prompts and stops", _hooks),
    Command(
        "/mcp",
        "list MCP servers, their status and tools (/mcp reconnect|disable NAME)",
        _mcp,
        "[reconnect|disable NAME]",
    ),
    Command(
        "/processes",
        "background processes and their output (/processes ID|stop ID|keep ID|release ID)",
        lambda host, rest: processes_command(host.agent.processes, rest),
        "[ID | stop ID | keep ID | release ID]",
    ),
    Command("/copy", "copy the last answer to the clipboard", _copy),
    Command(
        "/stats",
        "tokens, cost and tool calls of this session and of today (monkey stats: more)",
        lambda host, rest: stats_command(host.store, host.agent.session_id, rest),
    ),
    Command("/exit", "quit", _exit, aliases=("/quit",)),
]
"""Every command, in the order ``/help`` lists them."""

COMMANDS: dict[str, str] = {c.name: c.help for c in REGISTRY}
"""Command names and what they do (for completion and help)."""

_BY_NAME: dict[str, Command] = {name: c for c in REGISTRY for name in (c.name, *c.aliases)}


async def run_command(host: Host, text: str) -> list[Reply]:
    """Run the command ``text`` names (``/undo --force``); an unknown one says so."""
    name, _, rest = text.strip().partition(" ")
    command = _BY_NAME.get(name)
    if command is None:
        skill = await _run_skill(host, name, rest.strip())
        if skill is not None:
            return skill
        return [Note(_unknown(host, name), "warning")]
    return await command.run(host, rest.strip())
