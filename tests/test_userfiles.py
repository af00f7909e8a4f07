"""The person's files in the monkey home under many writers at once: real processes, one file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.permissions.user_rules import add_rules, remove_rule, saved_rules
from monkey.trust import trust, trusted_folders
from tests.support.cli import monkey_env

WRITERS = 20
EACH = 10

# Each writer process adds EACH entries, one read-modify-write per entry; writer 0 first revokes
# the entry that was there before any of them started (a stale copy of another writer must not bring it back).
RULES = """
import sys
from pathlib import Path
from monkey.permissions.user_rules import add_rules, remove_rule
home, me = Path(sys.argv[1]), int(sys.argv[2])
if me == 0:
    assert remove_rule(home, "shell_execute(rm *)")
for n in range(%d):
    assert add_rules(home, [f"file_read(w{me}/{n}/**)"]) == [f"file_read(w{me}/{n}/**)"]
""".replace("%d", str(EACH))  # not .format: the script's own f-strings use braces

TRUST = """
import sys
from pathlib import Path
from monkey.trust import trust, untrust
home, me, root = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
if me == 0:
    assert untrust(root / "revoked", home)
for n in range(%d):
    trust(root / f"w{me}" / str(n), home)
""".replace("%d", str(EACH))  # not .format: the script's own f-strings use braces


def _run_writers(script: str, *args: str, home: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(home), str(me), *args],
            env=monkey_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in range(WRITERS)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err


@pytest.mark.subprocess
def test_twenty_processes_saving_rules_lose_nothing_and_a_revoked_rule_stays_gone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('# mine\n[approvals]\nallow = ["shell_execute(rm *)", "file_read(kept)"]\n')
    _run_writers(RULES, home=home)
    rules = saved_rules(home)
    assert "shell_execute(rm *)" not in rules
    assert sorted(rules) == sorted(
        ["file_read(kept)", *(f"file_read(w{me}/{n}/**)" for me in range(WRITERS) for n in range(EACH))]
    )
    text = (home / "config.toml").read_text()
    assert text.startswith("# mine\n")  # the person's comment kept
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.subprocess
def test_twenty_processes_trusting_folders_lose_nothing_and_an_untrusted_folder_stays_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "folders"
    trust(root / "revoked", home)
    trust(root / "kept", home)
    _run_writers(TRUST, str(root), home=home)
    folders = trusted_folders(home)
    assert str(root / "revoked") not in folders
    assert sorted(folders) == sorted(
        [str(root / "kept"), *(str(root / f"w{me}" / str(n)) for me in range(WRITERS) for n in range(EACH))]
    )
    assert json.loads((home / "trusted_folders.json").read_text())["folders"] == folders
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    """A rule that cannot be written leaves the file as it was, and no temporary file behind."""
    home = tmp_path / "home"
    home.mkdir()
    add_rules(home, ["file_read(a)"])
    before = (home / "config.toml").read_text()
    (home / "config.toml").write_text(before + "[approvals\n")  # damaged by hand: not TOML
    with pytest.raises(OSError, match="not valid TOML"):
        add_rules(home, ["file_read(b)"])
    with pytest.raises(OSError, match="not valid TOML"):
        remove_rule(home, "file_read(a)")
    assert (home / "config.toml").read_text() == before + "[approvals\n"
    assert sorted(p.name for p in home.iterdir()) == [".config.toml.lock", "config.toml"]
