"""The manual (docs/) and the README stay true to the code.

Every flag of every ``monkey`` command is on its command's page, every config key on the
configuration page, every event type on the events page, every slash command on the app's
page; every relative link and anchor resolves; the site builds with ``mkdocs build --strict``;
and the examples marked ``<!-- run -->`` run (on the scripted backend where a model is needed).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

PAGES = {
    "": "app.md",  # monkey's own flags (--version)
    "agent": "app.md",
    "undo": "undo.md",
    "restore": "undo.md",
    "checkpoints": "undo.md",
    "sessions": "sessions.md",
    "stats": "metrics.md",
    "trust": "configuration.md",
    "plugins": "backends.md",
    "workflows": "extensions.md",
    "acp": "integrations.md",
    "serve": "integrations.md",
    "web": "web.md",
    "worktrees": "worktrees.md",
}
"""The page that documents each command (by its first word)."""

NOT_CONFIG_KEYS = {"notices", "untrusted"}
"""Fields of ``Config`` the loader fills itself (what it told and left out); no file sets them."""


# -- reading Markdown ---------------------------------------------------------------------

FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.M | re.S)


def fenced_blocks(text: str, lang: str | None = None) -> list[str]:
    """The bodies of the fenced code blocks (of one language when ``lang`` is given)."""
    found = []
    for match in re.finditer(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", text, re.M | re.S):
        if lang is None or match.group(1) == lang:
            found.append(match.group(2))
    return found


def code_text(text: str) -> str:
    """Everything a page shows as code: fenced blocks and inline code spans."""
    spans = re.findall(r"`([^`\n]+)`", FENCE.sub("", text))
    return "\n".join(fenced_blocks(text) + spans)


def slug(heading: str) -> str:
    """A heading's anchor, as MkDocs' toc (and, for plain headings, GitHub) makes it."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(text: str) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", text), re.M)}


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file that lead nowhere: a missing file, or a missing heading."""
    text = path.read_text()
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))
    problems = []
    for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{path.name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            problems.append(f"{path.name}: {target}: no heading #{anchor} in {dest.name}")
    return problems


def has_token(haystack: str, token: str) -> bool:
    """``token`` (a flag, a command) stands on its own in ``haystack``: ``-v`` is not ``-vv``."""
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", haystack) is not None


# -- what the code has ----------------------------------------------------------------------


def command_flags(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], list[str]]:
    """Every command (``("sessions", "list")``) and its option strings, walking the real parser."""
    found: dict[tuple[str, ...], list[str]] = {path: []}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(command_flags(sub, (*path, name)))
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            found[path] += action.option_strings
    return found


def config_keys(struct: type, prefix: str = "") -> list[str]:
    """Every dotted key a config struct accepts (``*`` for a name the person chooses)."""
    keys = []
    for field in msgspec.structs.fields(struct):
        if not prefix and field.name in NOT_CONFIG_KEYS:
            continue
        key = f"{prefix}{field.name}"
        keys.append(key)
        kind = field.type
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            keys += config_keys(kind, key + ".")
        elif getattr(kind, "__origin__", None) is dict:
            value = kind.__args__[1]
            if isinstance(value, type) and issubclass(value, msgspec.Struct):
                keys += config_keys(value, key + ".*.")
    return keys


def all_config_keys() -> list[str]:
    from monkey.backends.plugin.discovery import AliasSettings, PluginSettings
    from monkey.config import Config

    return config_keys(Config) + config_keys(PluginSettings, "plugins.*.") + config_keys(AliasSettings, "agents.*.")


def documented_keys(text: str) -> set[str]:
    """Every dotted key (and every prefix of one) the TOML blocks of a page set."""
    keys: set[str] = set()

    def walk(table: dict[str, Any], prefix: str) -> None:
        for name, value in table.items():
            keys.add(prefix + name)
            if isinstance(value, dict):
                walk(value, f"{prefix}{name}.")

    for block in fenced_blocks(text, "toml"):
        walk(tomllib.loads(block), "")
    return keys


def undocumented(expected: list[str], documented: set[str]) -> list[str]:
    def matches(pattern: str) -> bool:
        parts = pattern.split(".")
        return any(
            len(d.split(".")) == len(parts) and all(p in ("*", q) for p, q in zip(parts, d.split("."), strict=False))
            for d in documented
        )

    return [key for key in expected if not matches(key)]


def page(name: str) -> str:
    return (DOCS / name).read_text()


# -- the drift tests ------------------------------------------------------------------------


def test_every_flag_of_every_command_is_on_its_page() -> None:
    from monkey.cli import build_parser

    commands = command_flags(build_parser())
    assert ("agent",) in commands and "--task" in commands[("agent",)] and ("checkpoints", "gc") in commands
    missing = []
    for path, flags in commands.items():
        name = path[0] if path else ""
        assert name in PAGES, f"`monkey {name}` has no page in PAGES: document it and add it there"
        text = code_text(page(PAGES[name]))
        if path and not has_token(text, "monkey " + " ".join(path)):
            missing.append(f"{PAGES[name]}: the command `monkey {' '.join(path)}`")
        missing += [
            f"{PAGES[name]}: `{flag}` of `monkey {' '.join(path)}`" for flag in flags if not has_token(text, flag)
        ]
    assert not missing, "not in the manual:\n" + "\n".join(missing)


def test_the_flag_check_finds_a_flag_without_docs() -> None:
    parser = argparse.ArgumentParser(prog="monkey")
    sub = parser.add_subparsers()
    agent = sub.add_parser("agent")
    agent.add_argument("-v", "--verbose", action="count")
    agent.add_argument("--frobnicate")
    flags = command_flags(parser)[("agent",)]
    text = code_text("Run `monkey agent -vv` or `monkey agent --verbose`; see --frobnicate in prose only.\n")
    assert [f for f in flags if not has_token(text, f)] == ["-v", "--frobnicate"]


def test_every_config_key_is_on_the_configuration_page() -> None:
    expected = all_config_keys()
    assert {"agent.backend", "anthropic.prices.*.input", "plugins.*.grace", "agents.*.extends", "hooks"} <= set(
        expected
    )
    missing = undocumented(expected, documented_keys(page("configuration.md")))
    assert not missing, "config keys missing from docs/configuration.md's TOML blocks:\n" + "\n".join(missing)


def test_every_toml_block_in_the_manual_is_a_config_the_loader_takes() -> None:
    """The other way round: no page shows a key or a value monkey would refuse."""
    from monkey.backends.plugin.discovery import AliasSettings, PluginSettings
    from monkey.config import Config

    checked = 0
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for block in fenced_blocks(path.read_text(), "toml"):
            data = tomllib.loads(block)
            try:
                msgspec.convert(data, Config)
                for settings in data.get("plugins", {}).values():
                    msgspec.convert(settings, PluginSettings)
                for alias in data.get("agents", {}).values():
                    msgspec.convert(alias, AliasSettings)
            except msgspec.ValidationError as exc:
                pytest.fail(f"{path.name}: a TOML block monkey would refuse: {exc}\n{block}")
            checked += 1
    assert checked > 10


def test_the_key_check_finds_a_key_without_docs() -> None:
    documented = documented_keys('```toml\n[shell]\ntimeout = 10\n[anthropic.prices."m"]\ninput = 1.0\n```\n')
    assert undocumented(
        ["shell.timeout", "shell.sandbox", "anthropic.prices.*.input", "anthropic.prices.*.output"], documented
    ) == ["shell.sandbox", "anthropic.prices.*.output"]


def test_every_event_type_is_on_the_events_page() -> None:
    from monkey.events import EVENT_TYPES

    assert "session_started" in EVENT_TYPES
    headings = anchors(page("events.md"))
    missing = [kind for kind in EVENT_TYPES if kind not in headings]
    assert not missing, f"event types without a heading in docs/events.md: {missing}"


def test_every_slash_command_is_on_the_app_page() -> None:
    from monkey.session.commands import REGISTRY

    shown = {span.split()[0] for span in re.findall(r"`([^`\n]+)`", page("app.md")) if span.startswith("/")}
    names = [name for command in REGISTRY for name in (command.name, *command.aliases)]
    assert "/undo" in names
    missing = [name for name in names if name not in shown]
    assert not missing, f"slash commands missing from docs/app.md: {missing}"


def test_every_relative_link_and_anchor_resolves() -> None:
    files = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    assert len(files) > 10
    problems = [problem for path in files for problem in broken_links(path)]
    assert not problems, "\n".join(problems)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## The `x` part (one)\n")
    (tmp_path / "b.md").write_text(
        "[ok](a.md#the-x-part-one) [no file](c.md) [no heading](a.md#nope) [web](https://e.org/x.md)\n"
        "`[in code](d.md)`\n\n```\n[in a block](e.md)\n```\n[here](#b)\n\n## B\n"
    )
    assert broken_links(tmp_path / "b.md") == ["b.md: c.md: no such file", "b.md: a.md#nope: no heading #nope in a.md"]


def test_the_site_builds_strictly_offline(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "events" / "index.html").exists()


# -- the runnable examples --------------------------------------------------------------------


def runnable(text: str) -> tuple[dict[str, str], list[str]]:
    """A page's files (``<!-- file: NAME -->`` before a block) and commands (``<!-- run -->`` before a sh block)."""
    files = {
        m.group(1): m.group(2) for m in re.finditer(r"^<!-- file: (\S+) -->\n```[^\n]*\n(.*?)^```", text, re.M | re.S)
    }
    commands = [
        line.strip()
        for m in re.finditer(r"^<!-- run -->\n```sh\n(.*?)^```", text, re.M | re.S)
        for line in m.group(1).splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    return files, commands


RUNNABLE = sorted(p.name for p in DOCS.glob("*.md") if runnable(p.read_text())[1])


def test_some_examples_are_runnable() -> None:
    assert {"undo.md", "events.md", "backends.md"} <= set(RUNNABLE)


@pytest.mark.parametrize("name", RUNNABLE)
def test_runnable_examples_run(name: str, tmp_path: Path, monkey_home: Path) -> None:
    files, commands = runnable(page(name))
    work = tmp_path / "work"
    work.mkdir()
    for file_name, content in files.items():
        (work / file_name).write_text(content)
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "monkey", f"{name}: a runnable line must be a monkey command: {line}"
        result = invoke(argv[1:], home=monkey_home, cwd=work)
        assert result.returncode == 0, f"{name}: `{line}` exited {result.returncode}\n{result.stdout}\n{result.stderr}"


def _sh_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_ci_the_readme_and_the_development_page_give_the_same_test_command() -> None:
    readme = _sh_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(readme) >= 2 and "pytest" in readme[1], "the README opens with the main job's command, then the tests'"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == readme[1], ".ci/run runs the README's test command, as it is written there"
    assert _sh_blocks((DOCS / "development.md").read_text(encoding="utf-8"))[0] == readme[1], (
        "docs/development.md opens with the README's test command"
    )
