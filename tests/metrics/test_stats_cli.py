"""``monkey stats``: every figure checked against what the real loop did (scripted backend, real
SQLite, real git checkpoints), the migration that fills the summary rows of older stores, and
the command's errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from monkey.cli import main
from monkey.db import db_path
from monkey.store.tally import micros, quantize
from tests.support.script import call


def agent(
    capsys,
    workspace: Path,
    script: Path,
    *flags: str,
    task: str = "do it",  # type: ignore[no-untyped-def]
    code: int = 0,
) -> list[dict[str, Any]]:
    ended = main(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--task",
            task,
            *flags,
        ]
    )
    out = capsys.readouterr().out
    assert ended == code, out[-2000:]
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def stats(capsys, *flags: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code = main(["stats", "--json", *flags])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


SCRIPT = {
    "turns": [
        {
            "text": "Writing.",
            "tool_calls": [call("file_write", path="a.txt", content="one\ntwo\nthree\n")],
            "usage": {"input_tokens": 1000, "output_tokens": 40, "cost_usd": 0.0123},
        },
        {
            "text": "Editing.",
            "tool_calls": [call("file_edit", path="a.txt", old_string="two", new_string="2\n2b")],
            "usage": {"input_tokens": 1100, "output_tokens": 30, "cost_usd": 0.0101},
        },
        {
            "text": "Reading.",
            "tool_calls": [call("file_read", path="missing.txt"), call("shell_execute", command="ls")],
            "usage": {"input_tokens": 1200, "output_tokens": 20, "cost_usd": 0.0003},
        },
        {
            "text": "Asking.",
            "tool_calls": [call("task", description="look", prompt="find it", agent="explore")],
            "usage": {"input_tokens": 1300, "output_tokens": 10, "cost_usd": 0.0001},
        },
        {"text": "Done.", "usage": {"input_tokens": 1400, "output_tokens": 5, "cost_usd": 0.0002}},
    ],
    "agents": {
        "explore": {
            "turns": [{"text": "found it", "usage": {"input_tokens": 70, "output_tokens": 7, "cost_usd": 0.0007}}]
        }
    },
}


def test_every_figure_of_a_session_is_what_the_loop_did(
    workspace: Path, monkey_home: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    (monkey_home / "config.toml").write_text('[approvals]\nmode = "auto"\ndeny = ["shell_execute"]\n')
    events = agent(capsys, workspace, _script(tmp_path, SCRIPT), code=4)  # 4: a call was denied
    usage = [e for e in events if e["type"] == "usage"]
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert results["shell_execute"]["denied_by"] == "rule" and not results["file_read"]["ok"]
    assert all(u["duration_ms"] > 0 and 0 < u["ttft_ms"] <= u["duration_ms"] for u in usage)

    got = stats(capsys, "--cwd", str(workspace))
    t = got["totals"]
    assert t["sessions"] == 1 and t["turns"] == 1
    assert t["model_calls"] == len([e for e in events if e["type"] == "message_completed"]) == 6  # 5 + the child's
    assert t["tokens"] == {
        "input": sum(u["input_tokens"] for u in usage),
        "output": sum(u["output_tokens"] for u in usage),
        "cache_read": 0,
        "cache_creation": 0,
    }
    assert t["tokens"]["input"] == 1000 + 1100 + 1200 + 1300 + 1400 + 70
    assert t["cost_micros"] == sum(micros(u["cost_usd"]) for u in usage) == 23_700
    assert t["cost_usd"] == 0.0237 and t["cache_hit_ratio"] == 0.0
    assert t["ttft_ms"]["p50"] is not None and t["call_ms"]["p95"] >= t["call_ms"]["p50"] > 0
    assert t["tokens_per_second"] > 0
    assert t["tools"] == {
        "calls": 5,
        "ok": 3,
        "failed": 1,
        "denied_rule": 1,
        "denied_person": 0,
        "cancelled": 0,
        "duration_ms": t["tools"]["duration_ms"],
    }
    assert t["approvals"]["asked"] == 0 and t["approvals"]["answer_ms"] == {"p50": None, "p95": None}
    # a.txt: written with 3 lines, then "two" became two lines: +3, then +2 -1
    assert t["changes"] == {"lines_added": 5, "lines_removed": 1, "files_changed": 2, "undos": 0}
    assert (t["subagents"], t["budgets_reached"], t["compactions"]) == (1, 0, 0)

    by_tool = {g["key"]: g["tools"] for g in stats(capsys, "--cwd", str(workspace), "--by", "tool")["groups"]}
    assert set(by_tool) == {"file_write", "file_edit", "file_read", "shell_execute", "task"}
    assert by_tool["shell_execute"]["denied_rule"] == 1 and by_tool["shell_execute"]["duration_ms"]["p50"] is None
    assert by_tool["file_read"]["failed"] == 1 and by_tool["task"]["ok"] == 1
    durations = {e["name"]: e["duration_ms"] for e in events if e["type"] == "tool_result"}
    assert by_tool["file_write"]["duration_ms"]["p50"] == round(quantize(durations["file_write"]), 1)

    by_session = stats(capsys, "--cwd", str(workspace), "--by", "session")["groups"]
    started = next(e for e in events if e["type"] == "session_started")
    assert [g["key"] for g in by_session] == [started["session_id"]]  # the sub-agent's figures are its parent's
    assert by_session[0]["cost_micros"] == t["cost_micros"]
    one = stats(capsys, "--session", started["session_id"])
    assert one["totals"] == t
    child = next(e for e in events if e["type"] == "subagent_started")["child_session_id"]
    alone = stats(capsys, "--session", child)["totals"]
    assert (alone["model_calls"], alone["cost_micros"], alone["turns"]) == (1, 700, 1)  # its own turn, asked on its own

    by_model = stats(capsys, "--cwd", str(workspace), "--by", "model")["groups"]
    assert [g["key"] for g in by_model] == ["scripted"]
    by_day = stats(capsys, "--cwd", str(workspace), "--by", "day")
    assert len(by_day["groups"]) == 1 and by_day["daily"][0]["cost_micros"] == 23_700
    assert stats(capsys, "--cwd", str(tmp_path))["totals"]["sessions"] == 0  # another workspace
    assert stats(capsys, "--all")["totals"] == t
    assert stats(capsys, "--all", "--since", "2099-01-01")["totals"]["sessions"] == 0

    # the terminal's tables and chart
    assert main(["stats", "--cwd", str(workspace), "--by", "tool"]) == 0
    text = capsys.readouterr().out
    assert "cost      $0.02" in text and "tokens per day" in text and "█" in text
    assert "shell_execute" in text and "1 denied by a rule" in text and "+5 -1 lines in 2 files" in text


def _script(tmp_path: Path, script: dict[str, Any]) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script))
    return path


def test_the_migration_fills_the_summary_rows_of_an_older_store(
    workspace: Path, monkey_home: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    (monkey_home / "config.toml").write_text('[approvals]\nmode = "auto"\ndeny = ["shell_execute"]\n')
    agent(capsys, workspace, _script(tmp_path, SCRIPT), code=4)  # 4: a call was denied
    kept = stats(capsys, "--all")["totals"]
    conn = sqlite3.connect(db_path(monkey_home))
    # a store of before the summary rows (version 3, the search index made) and what came after them
    conn.executescript(
        "DROP TABLE stat_slots; DROP TABLE stat_samples; DROP INDEX sessions_by_parent; "
        "DROP TABLE control; UPDATE schema_migrations SET version = 3 WHERE component = 'store';"
    )
    conn.close()
    again = stats(capsys, "--all")["totals"]  # opening the store runs the migration
    # what older events say is all there again; what they never said (timings, lines, who refused) is not
    same = ("sessions", "turns", "model_calls", "tokens", "cost_micros", "subagents", "budgets_reached", "compactions")
    assert {k: again[k] for k in same} == {k: kept[k] for k in same}
    assert again["tools"]["calls"] == 5 and again["tools"]["ok"] == 3
    assert again["tools"]["failed"] == 2 and again["tools"]["denied_rule"] == 0  # a refusal counts as failed
    assert again["tools"]["duration_ms"]["p50"] is not None and again["ttft_ms"]["p50"] is None


def test_deleting_a_session_deletes_its_figures(workspace: Path, monkey_home: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    events = agent(capsys, workspace, _script(tmp_path, {"turns": [{"text": "hi", "usage": {"cost_usd": 0.5}}]}))
    assert stats(capsys, "--all")["totals"]["cost_micros"] == 500_000
    sid = events[0]["session_id"]
    assert main(["sessions", "rm", sid]) == 0
    capsys.readouterr()
    conn = sqlite3.connect(db_path(monkey_home))
    assert conn.execute("SELECT count(*) FROM stat_slots").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM stat_samples").fetchone()[0] == 0
    assert stats(capsys, "--all")["totals"]["sessions"] == 0


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--since", "yesterday"], "--since 'yesterday': give a span back from now"),
        (["--since", "2026-02-30"], "--since '2026-02-30': no such date"),
        (["--since=-7d"], "give a span back from now"),
        (["--by", "month"], "invalid choice: 'month'"),
        (["--session", "nosuchsession"], "no session 'nosuchsession'"),
        (["--session", "x", "--all"], "--session and --all do not go together"),
    ],
)
def test_bad_input_is_refused_clearly(flags: list[str], said: str, capsys) -> None:  # type: ignore[no-untyped-def]
    try:
        code = main(["stats", *flags])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code in (1, 2) and said in err


def test_an_empty_store_says_so(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["stats", "--cwd", str(workspace)]) == 0
    assert "no sessions stored for this workspace" in capsys.readouterr().out


def test_a_budget_reached_is_counted(workspace: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    script = _script(
        tmp_path,
        {
            "turns": [
                {"text": "Reading.", "tool_calls": [call("file_read", path="README.md")], "usage": {"cost_usd": 0.75}},
                {"text": "never reached", "usage": {"cost_usd": 0.75}},
            ]
        },
    )
    ended = main(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--max-budget-usd",
            "0.5",
            "--task",
            "read",
        ]
    )
    out = capsys.readouterr().out
    assert ended != 0 and '"type":"budget_reached"' in out
    t = stats(capsys, "--cwd", str(workspace))["totals"]
    assert (t["budgets_reached"], t["cost_micros"], t["model_calls"]) == (1, 750_000, 1)
