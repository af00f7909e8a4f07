"""``monkey web`` in a real browser (Chromium from the system, driven by Playwright): a ``--task``
session of another process appears and its events arrive live; hostile text stays text; a
forged Host and a cross-site POST are refused; a reconnect replays exactly the missed events.
The tests take the screenshots of docs/images/ (written there with ``MONKEY_UPDATE_SCREENSHOTS=1``)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.checkpoints import write_script

from tests.support.cli import ROOT, monkey_env
from tests.support.web import TOKEN, served

CHROMIUM = os.environ.get("MONKEY_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="no Chromium (apt-get install chromium; Playwright's own download is not used)",
    ),
]
IMAGES = ROOT / "docs" / "images"


def _image(name: str) -> Path:
    """Where a screenshot goes: into docs/images/ when asked (``MONKEY_UPDATE_SCREENSHOTS=1``), else into a
    temporary folder, so that a test run leaves the working tree as it found it."""
    if os.environ.get("MONKEY_UPDATE_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        return IMAGES / name
    return Path(tempfile.mkdtemp(prefix="monkey-shot-")) / name


HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>\x1b[31mred\x1b[0m\x07'


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(
            executable_path=CHROMIUM, args=["--host-resolver-rules=MAP rebound.test 127.0.0.1"]
        )
        try:
            yield chromium
        finally:
            await chromium.close()


def _task(ws: Path, home: Path, script: Path, prompt: str) -> subprocess.Popen[str]:
    """``monkey agent --task`` in another process (the scripted backend, mode auto)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--mode",
            "auto",
            "--output-format",
            "text",
            "--task",
            prompt,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(home),
    )


def _gated(tmp: Path, *, answer: str = "done: the gate opened") -> tuple[Path, Path]:
    """A script whose first call waits on a FIFO (``cat gate``) until the test writes to it."""
    gate = tmp / "gate"
    os.mkfifo(gate)
    script = write_script(
        tmp / "s.json",
        [
            {
                "text": "I will wait at the gate.",
                "thinking": "the gate first",
                "tool_calls": [{"name": "shell_execute", "arguments": {"command": f"cat {gate}"}}],
                "usage": {"input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0012},
            },
            {
                "text": "",
                "tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt", "content": "one\ntwo\n"}}],
                "usage": {"input_tokens": 150, "output_tokens": 20, "cost_usd": 0.0015},
            },
            {"text": answer, "usage": {"input_tokens": 180, "output_tokens": 10, "cost_usd": 0.0018}},
        ],
    )
    return gate, script


async def _open_gate(gate: Path) -> None:
    await asyncio.to_thread(gate.write_text, "the gate opened\n")


FIXED = """
.ws, .when, .took, .tokens { font-size: 0 !important; }
.ws::after { content: "/home/you/proj"; }
.tokens::after { content: "512 tokens"; }
.meta .tokens::after { font-size: 13.6px; }
.info .tokens::after { font-size: 14.4px; }
.when::after { content: "2026-11-27 04:00:00 UTC"; }
.took::after { content: "0.10s"; }
.meta .ws::after, .meta .when::after { font-size: 13.6px; }
.info .ws::after, .info .when::after { font-size: 14.4px; }
.took::after { font-size: 14.4px; }
#workspace { width: 16em; }
"""
"""What depends on the run (the temporary workspace's path, clock times, durations, the scripted model's token
counts, which count the system prompt naming that path) drawn as fixed text
in the docs' screenshots, so they are the same on every machine (a style sheet: the live page may
render again while the picture is taken)."""


async def _shot(page: Any, name: str) -> None:
    await page.add_style_tag(content=FIXED)
    await page.screenshot(path=str(_image(name)), animations="disabled")


async def test_a_task_session_appears_and_its_events_arrive_live(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    gate, script = _gated(tmp_path)
    async with served() as front:
        # bypass_csp: the screenshots add a style sheet (the hostile-text test runs with the policy)
        page = await (await browser.new_context(viewport={"width": 900, "height": 640}, bypass_csp=True)).new_page()
        await page.goto(front.url)
        assert "token=" not in page.url, "the token leaves the address bar"
        await page.wait_for_selector("#empty:not([hidden])")
        proc = _task(workspace, monkey_home, script, "wait at the gate, then write notes")
        try:
            row = page.locator("li.session", has_text="wait at the gate")
            await row.locator(".state.running").wait_for()
            await row.locator("a.title").click()
            await page.wait_for_selector("#transcript .tool[data-call] .name:text('shell_execute')")
            assert (
                await page.locator("#transcript .msg.user .text").inner_text() == "wait at the gate, then write notes"
            )
            assert await page.locator("#transcript .tool .result").first.inner_text() == "", "still running"
            await _open_gate(gate)
            await page.wait_for_selector("#transcript .msg.assistant .text:text('done: the gate opened')")
            assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
        outputs = await page.locator("#transcript .tool .output").all_inner_texts()
        assert outputs[0].startswith("the gate opened")
        assert "+two" in await page.locator("#transcript .diff").first.inner_text()
        assert await page.locator("#transcript details:not([hidden]) summary", has_text="thinking").count() == 1
        await page.click(".tabs button[data-tab=events]")
        await page.select_option("#type-filter", "tool_result")
        visible = page.locator("#event-list li:not([hidden])")
        assert await visible.count() == 2
        assert set(await visible.locator(".type").all_inner_texts()) == {"tool_result"}
        await page.click(".tabs button[data-tab=transcript]")
        await page.wait_for_selector("#info .state.ended")
        await _shot(page, "web-session.png")
        await page.goto(front.url.split("/?")[0] + "/")
        await page.locator("li.session .state.ended").wait_for()
        await _shot(page, "web-sessions.png")


async def test_hostile_text_is_shown_as_text_and_runs_nothing(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    (tmp_path / "hostile.txt").write_text(HOSTILE)
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": HOSTILE,
                "tool_calls": [{"name": "shell_execute", "arguments": {"command": f"cat {tmp_path / 'hostile.txt'}"}}],
            },
            {"text": "said " + HOSTILE},
        ],
    )
    proc = _task(workspace, monkey_home, script, HOSTILE)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    async with served() as front:
        page = await browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))
        await page.goto(front.url)
        await page.locator("li.session a.title").click()
        await page.wait_for_selector("#transcript .msg.assistant .text:text('said')")
        await page.wait_for_selector("#transcript .tool .result .good")
        shown = await page.locator("#transcript .tool .output").inner_text()
        assert '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>' in shown
        assert "\u241b[31mred\u241b[0m\u2407" in shown, "terminal escapes show as symbols"
        assert "<img src=x" in await page.locator("#transcript .msg.user .text").inner_text()
        assert "<img src=x" in await page.locator("#title").inner_text()
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("main img, main script").count() == 0
        await page.goto(front.url.split("/?")[0] + "/")
        await page.locator("li.session a.title").wait_for()
        assert await page.evaluate("window.__pwned") is None and dialogs == []


async def test_no_token_a_rebound_host_and_a_cross_site_post_are_refused(browser: Any) -> None:
    async with served() as front:
        port = front.url.split(":")[2].split("/")[0]
        page = await browser.new_page()
        answer = await page.goto(front.url.split("/?")[0] + "/")
        assert answer.status == 401
        answer = await page.goto(f"http://rebound.test:{port}/?token={TOKEN}")  # DNS rebinding: a name made 127.0.0.1
        assert answer.status == 403 and "Host" in await page.inner_text("body")
        assert (await page.goto(front.url)).status == 200, "the token was not spent by the refused requests"
        # another site's page posts a form to the monitor: the browser sends no cookie (SameSite=Strict)
        # and its Origin; the monitor refuses it
        attacker = "http://attacker.test/"
        await page.route(
            attacker,
            lambda route: route.fulfill(
                content_type="text/html",
                body=(
                    f'<form id=f method=post action="http://127.0.0.1:{port}/api/sessions"></form>'
                    "<script>document.getElementById('f').submit()</script>"
                ),
            ),
        )
        # the POST: the monitor's page, still open, may poll the same address by GET meanwhile
        async with page.expect_response(
            lambda r: r.url.endswith("/api/sessions") and r.request.method == "POST"
        ) as posted:
            await page.goto(attacker)
        assert (await posted.value).status == 403
        assert "another origin" in await page.inner_text("body")


async def test_a_reconnect_replays_exactly_the_missed_events(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    from monkey.web.server import WebFront, WebSettings

    gate, script = _gated(tmp_path)
    proc = _task(workspace, monkey_home, script, "wait at the gate")
    try:
        async with served() as front:
            page = await browser.new_page()
            await page.goto(front.url)
            await page.locator("li.session a.title").click()
            await page.wait_for_selector("#transcript .tool .name:text('shell_execute')")
            seen = int(await page.get_attribute("body", "data-last") or 0)
            app, port = front.app, int(front.url.split(":")[2].split("/")[0])
        await page.wait_for_selector("#status:text('reconnecting')")
        await _open_gate(gate)  # the session goes on while the monitor is down
        assert proc.wait(timeout=60) == 0
        again = WebFront(WebSettings(port=port, token=TOKEN), app=app, say=lambda line: None)
        task = asyncio.create_task(again.serve())
        try:
            await page.wait_for_selector(
                "#transcript .msg.assistant .text:text('done: the gate opened')", timeout=20000
            )
            await page.wait_for_selector("#info .state.ended")
        finally:
            again.stop()
            await task
        await page.click(".tabs button[data-tab=events]")  # the list is built when its tab is shown
        seqs = [int(s) for s in await page.locator("#event-list li").evaluate_all("els => els.map(e => e.dataset.seq)")]
        assert seen > 0 and seqs == list(range(1, len(seqs) + 1)), "each event once, none missed"
        import sqlite3

        from monkey.db import db_path

        conn = sqlite3.connect(db_path(monkey_home))
        try:
            total = conn.execute("SELECT max(seq) FROM events").fetchone()[0]
        finally:
            conn.close()
        assert seqs[-1] == total and len(seqs) > seen
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_an_approval_denied_in_the_browser_with_a_reason_reaches_the_terminal_session(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    from tests.support.web import WRITE, waiting

    with waiting(workspace, monkey_home, write_script(tmp_path / "s.json", WRITE)) as child:
        async with served() as front:
            page = await (await browser.new_context(viewport={"width": 900, "height": 640}, bypass_csp=True)).new_page()
            await page.goto(front.url)
            await page.locator("li.session .state.waiting").wait_for()
            await page.locator("li.session a.title").click()
            box = page.locator("#approvals li[data-call]")
            await box.wait_for()
            assert "file_write" in await box.inner_text()
            await box.locator("input").fill("write b.txt instead")
            await _shot(page, "web-approval.png")
            await box.locator("button[data-choice=deny]").click()
            # waited for in a thread: the monitor serves the page's answer from this test's event loop
            await asyncio.to_thread(child.expect_exact, "file_write: denied in the browser: write b.txt instead")
            await asyncio.to_thread(child.expect_exact, "the turn is over")
            await page.wait_for_selector("#transcript .tool .result .bad")
            await page.wait_for_selector("#approvals-box", state="hidden")
            # what the answer came to stays shown once the question has left the list (whichever came first,
            # the list's refresh or the answer's reply)
            await page.locator("#approvals-said", has_text="file_write: answered here: deny").wait_for()
    assert not (workspace / "a.txt").exists()


async def _checkpoints_shot(page: Any) -> None:
    """docs/images/web-checkpoints.png: the checkpoint's id, its session's id and its time drawn fixed (the
    checkpoints tab is built once from the events: nothing draws it again while the picture is taken)."""
    checkpoint = await page.get_attribute("#checkpoint-list li", "data-checkpoint")
    sid = await page.evaluate("new URLSearchParams(location.search).get('id')")
    await page.evaluate(
        """([checkpoint, sid]) => {
      for (const pre of document.querySelectorAll('#checkpoint-list pre.preview')) {
        pre.textContent = pre.textContent.replaceAll(checkpoint, '0193a5c0ffee1234abcd')
          .replaceAll(sid, '0193a5c0ffee5678ef01').replace(/\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d/, '2026-11-27 04:00:00');
      }
      for (const name of document.querySelectorAll('#checkpoint-list .name')) name.textContent = '0193a5c0ffee';
    }""",
        [checkpoint, sid],
    )
    assert checkpoint not in await page.locator("#checkpoint-list").inner_text()
    await _shot(page, "web-checkpoints.png")


async def test_undo_from_the_browser_shows_the_preview_then_undoes(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    from tests.support.web import ANSWER

    proc = _task(workspace, monkey_home, write_script(tmp_path / "s.json", ANSWER), "write a file")
    assert proc.wait(timeout=60) == 0
    assert (workspace / "a.txt").exists()
    async with served() as front:
        page = await (await browser.new_context(viewport={"width": 900, "height": 640}, bypass_csp=True)).new_page()
        await page.goto(front.url)
        await page.locator("li.session a.title").click()
        await page.click(".tabs button[data-tab=checkpoints]")
        await page.click("#checkpoint-list li button.preview-undo")
        preview = page.locator("#checkpoint-list pre.preview")
        await preview.wait_for()
        assert "+hi" in await preview.inner_text()
        await _checkpoints_shot(page)
        await page.click("#checkpoint-list button.apply")
        await page.locator("#checkpoint-list .said .good", has_text="undone: a.txt").wait_for()
    assert not (workspace / "a.txt").exists()


async def test_cancel_and_mode_from_the_browser_reach_a_task_in_another_process(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    gate, script = _gated(tmp_path)
    proc = _task(workspace, monkey_home, script, "wait at the gate for good")
    try:
        async with served() as front:
            page = await browser.new_page()
            await page.goto(front.url)
            await page.locator("li.session .state.running").wait_for()
            await page.locator("li.session a.title").click()
            await page.wait_for_selector("#transcript .tool .name:text('shell_execute')")
            await page.wait_for_selector("#cancel-turn:not([disabled])")
            await page.select_option("#mode-choice", "plan")
            await page.click("#set-mode")
            await page.locator("#control-said", has_text="done: mode set to plan from the browser").wait_for()
            await page.wait_for_selector("#transcript .msg.note:text('mode set to plan from the browser')")
            await page.click("#cancel-turn")
            # attached, not visible: the turn may end (and the controls hide) before the page is looked at again
            await page.locator("#control-said", has_text="done: cancelled from the browser").wait_for(state="attached")
            await page.wait_for_selector("#transcript .msg.note:text('turn ended: cancelled from the browser')")
            assert await asyncio.to_thread(proc.wait, 60) == 130
            await page.wait_for_selector("#control", state="hidden")  # ended: nothing to steer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (workspace / "notes.txt").exists(), "the turn never went on"


STATS_RUN = [
    {
        "text": "",
        "tool_calls": [
            {"name": "file_write", "arguments": {"path": "notes.txt", "content": "one\n"}},
            {"name": "file_read", "arguments": {"path": "missing.txt"}},
        ],
        "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.012},
    },
    {
        "text": "",
        "tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}],
        "usage": {"input_tokens": 1500, "output_tokens": 40, "cost_usd": 0.0155},
    },
    {"text": "wrote notes.txt", "usage": {"input_tokens": 1600, "output_tokens": 30, "cost_usd": 0.016}},
]


async def test_the_stats_page_draws_the_figures_of_the_api(
    browser: Any, tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    first = _task(workspace, monkey_home, write_script(tmp_path / "a.json", STATS_RUN), "write notes")
    assert first.wait(timeout=60) == 0, first.stderr.read() if first.stderr else ""
    second = _task(
        workspace,
        monkey_home,
        write_script(
            tmp_path / "b.json",
            [{"text": "nothing to do", "usage": {"input_tokens": 700, "output_tokens": 25, "cost_usd": 0.003}}],
            model="haiku-ish",
        ),
        "say hello",
    )
    assert second.wait(timeout=60) == 0
    async with served() as front:
        page = await (await browser.new_context(viewport={"width": 900, "height": 640}, bypass_csp=True)).new_page()
        await page.goto(front.url)
        await page.click("#stats-link")
        await page.wait_for_selector("body[data-ready]")
        api = {
            by: await page.evaluate(f"fetch('/api/stats?by={by}').then(r => r.json())")
            for by in ("day", "model", "tool")
        }
        totals = api["day"]["totals"]
        shown = {
            k: await page.locator(f"[data-figure='{k}'] dd").inner_text()
            for k in ("sessions", "tokens in", "tokens out", "cost", "tool calls")
        }
        assert shown == {
            "sessions": "2",
            "tokens in": f"{totals['tokens']['input']:,}",
            "tokens out": f"{totals['tokens']['output']:,}",
            "cost": f"${totals['cost_micros'] / 1e6:.4f}",
            "tool calls": str(totals["tools"]["calls"]),
        }
        assert totals["tokens"]["input"] == 5000 and totals["cost_micros"] == 46500

        async def rows(chart: str) -> list[tuple[str, str]]:
            found = page.locator(f"[data-chart='{chart}'] g.row")
            labels = await found.locator("text.label").all_text_contents()
            values = await found.locator("text.value").all_text_contents()
            return list(zip(labels, values, strict=True))

        assert await rows("tokens-per-model") == [
            (g["key"], f"{g['tokens']['input'] + g['tokens']['output']:,}") for g in api["model"]["groups"]
        ]
        assert {label for label, _ in await rows("cost-per-model")} == {"scripted", "haiku-ish"}
        assert dict(await rows("tools")) == {"file_read": "1/2 ok (50%)", "file_write": "1/1 ok (100%)"}
        assert await rows("tokens-per-day") == [(d["day"], f"{d['tokens']:,}") for d in api["day"]["daily"]]
        waits = dict(await rows("waits"))
        assert waits["model: whole call p50"].endswith(" ms") and "people: answer p50" not in waits, "nobody was asked"
        assert await page.locator(".chart svg foreignObject, .chart img, .chart script").count() == 0
        # the day and the measured durations drawn fixed in the docs' screenshot (the page is not drawn again)
        await page.evaluate("""() => {
          for (const t of document.querySelectorAll('.chart text.day')) t.textContent = '2026-11-27';
          document.querySelectorAll('[data-chart=waits] g.row').forEach((g, i) => {
            const width = [60, 90, 120, 160, 20, 30][i % 6];
            g.querySelector('rect').setAttribute('width', width);
            const value = g.querySelector('text.value');
            value.setAttribute('x', 190 + width + 6);
            value.textContent = [40, 60, 80, 107, 13, 20][i % 6] + ' ms';
          });
        }""")
        await page.screenshot(path=str(_image("web-stats.png")), animations="disabled", full_page=True)
        # one session's figures, on its page
        await page.goto(front.url.split("/?")[0] + "/")
        await page.locator("li.session a.title", has_text="say hello").click()
        await page.click(".tabs button[data-tab=figures]")
        await page.locator("#figures-box [data-figure='tokens in'] dd", has_text="700").wait_for()
        assert await page.locator("#figures-box [data-figure='sessions'] dd").inner_text() == "1"
