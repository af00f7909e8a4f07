"""``monkey web``'s figures: ``GET /api/stats`` gives what ``monkey stats --json`` prints for the same store
and scope (the same code reads the summary rows), and refuses what it does not understand."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.support.cli import invoke, write_script
from tests.support.web import asgi_client, login

FAILING = [
    {
        "text": "",
        "tool_calls": [
            {"name": "file_write", "arguments": {"path": "a.txt", "content": "hi\n"}},
            {"name": "file_read", "arguments": {"path": "missing.txt"}},
        ],
        "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.012},
    },
    {"text": "wrote a.txt", "usage": {"input_tokens": 1500, "output_tokens": 40, "cost_usd": 0.0155}},
]
OTHER = [{"text": "nothing to do", "usage": {"input_tokens": 700, "output_tokens": 25, "cost_usd": 0.003}}]


def _session(workspace: Path, home: Path, script: Path, *flags: str) -> str:
    run = invoke(
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
            "--mode",
            "auto",
            "--task",
            "work",
            *flags,
        ],
        home=home,
    )
    assert run.returncode in (0, 4), run.stderr
    return str(run.events[0]["session_id"])


def _cli(home: Path, *flags: str) -> dict[str, Any]:
    run = invoke(["stats", "--json", *flags], home=home)
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout))


async def _api(*queries: dict[str, str]) -> list[tuple[int, Any]]:
    async with asgi_client() as (client, _):
        await login(client)
        out = []
        for query in queries:
            answer = await client.get("/api/stats", params=query)
            out.append((answer.status_code, answer.json()))
        return out


def test_the_api_figures_are_monkey_stats_json_for_the_same_store(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    first = _session(workspace, monkey_home, write_script(tmp_path / "a.json", FAILING))
    other = tmp_path / "other"
    other.mkdir()
    _session(other, monkey_home, write_script(tmp_path / "b.json", OTHER, model="other-model"))
    wanted = {by: _cli(monkey_home, "--all", "--by", by) for by in ("day", "model", "tool", "session")}
    one = _cli(monkey_home, "--session", first, "--by", "tool")
    here = _cli(monkey_home, "--cwd", str(workspace), "--by", "model", "--since", "7d")
    got = asyncio.run(
        _api(
            *({"by": by} for by in wanted),
            {"session": first[:10], "by": "tool"},
            {"workspace": str(workspace), "by": "model", "since": "7d"},
            {},
        )
    )
    assert [code for code, _ in got] == [200] * 7
    for (_, body), by in zip(got, wanted, strict=False):
        assert body == wanted[by], by
    assert got[4][1] == one, "a session (by a unique prefix) and its sub-agents"
    since = got[5][1]
    assert since["scope"]["since"] is not None and abs(since["scope"]["since"] - here["scope"]["since"]) < 60
    assert {**since, "scope": None} == {**here, "scope": None}, "the same figures from the same span"
    assert got[6][1] == wanted["day"], "by day unless asked"
    totals = wanted["day"]["totals"]
    assert totals["sessions"] == 2 and totals["tokens"]["input"] == 1200 + 1500 + 700
    assert totals["cost_micros"] == 12000 + 15500 + 3000
    tools = {g["key"]: g["tools"] for g in wanted["tool"]["groups"]}
    assert (tools["file_write"]["ok"], tools["file_read"]["failed"]) == (1, 1)
    assert {g["key"] for g in wanted["model"]["groups"]} == {"scripted", "other-model"}


def test_what_the_stats_route_does_not_understand_is_refused(monkey_home: Path) -> None:
    got = asyncio.run(_api({"by": "colour"}, {"since": "yesterday-ish"}, {"session": "nope"}, {"since": "2026-02-31"}))
    assert [code for code, _ in got] == [400, 400, 404, 400]
    assert "by: one of day" in got[0][1]["error"]
    assert got[1][1]["error"].startswith("since 'yesterday-ish':")
    assert "no session 'nope'" in got[2][1]["error"]
