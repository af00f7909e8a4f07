"""An answer the model did not finish (stop reason ``max_tokens``) is said to be cut off, in
``--task``'s exit message and JSON output, in the REPL's rendering and in the app; the turn
itself completed (the partial answer is the result). Run in-process: the CLI's ``run_command``."""

from __future__ import annotations

import io
import json
from pathlib import Path

from monkey.cli import run_command
from monkey.events import TurnCompleted
from monkey.line.output import TextSink
from tests.support.cli import write_script
from tests.support.app import settle, type_and_send

CUT = [{"text": "The first half of a long answer, and then", "stop_reason": "max_tokens"}]


def run_task(workspace: Path, tmp_path: Path, capsys, *flags: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    script = write_script(tmp_path / "s.json", CUT)
    code = run_command(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "explain everything",
            *flags,
        ]
    )
    out = capsys.readouterr()
    return code, out.out, out.err


def test_task_text_says_on_stderr_that_the_answer_was_cut_off(workspace: Path, tmp_path: Path, capsys) -> None:
    code, out, err = run_task(workspace, tmp_path, capsys)
    assert code == 0
    assert "The first half of a long answer" in out
    assert "monkey: the answer was cut off: the model reached its output token limit (stop reason max_tokens)" in err


def test_task_json_names_the_stop_reason(workspace: Path, tmp_path: Path, capsys) -> None:
    code, out, err = run_task(workspace, tmp_path, capsys, "--output-format", "json")
    result = json.loads(out)
    assert result["stop_reason"] == "max_tokens"
    assert "cut off" in result["message"]
    assert result["result"].startswith("The first half")
    assert "cut off" in err


def test_task_stream_json_turn_completed_carries_the_stop_reason(workspace: Path, tmp_path: Path, capsys) -> None:
    code, out, err = run_task(workspace, tmp_path, capsys, "--output-format", "stream-json")
    ends = [json.loads(line) for line in out.splitlines() if '"turn_completed"' in line]
    assert ends and ends[-1]["stop_reason"] == "max_tokens" and ends[-1]["reason"] == "completed"


def test_an_answer_that_ended_on_its_own_says_nothing_more(workspace: Path, tmp_path: Path, capsys) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "A whole answer."}])
    code = run_command(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "json",
            "--task",
            "explain",
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["stop_reason"] == "" and "cut off" not in out.err


def test_the_repl_rendering_says_it() -> None:
    out = io.StringIO()
    sink = TextSink(out, color=False)
    sink(
        TurnCompleted(
            turn=1,
            reason="completed",
            result="half",
            stop_reason="max_tokens",
            message="the answer was cut off: the model reached its output token limit (stop reason max_tokens)",
        )
    )
    assert "the answer was cut off" in out.getvalue() and "max_tokens" in out.getvalue()


async def test_the_app_says_it(app_for) -> None:  # noqa: F811 (the fixture imported above)
    app = app_for(CUT)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "explain everything")
        await settle(pilot, app)
        notices = [str(w.render()) for w in app.transcript.query(".notice")]
        assert any("the answer was cut off" in n and "max_tokens" in n for n in notices), notices
