"""``/undo`` goes back to the latest change a person would recognise: a later test run that only
wrote caches (``__pycache__``, ``.pytest_cache``) or changed nothing does not take the press."""

from __future__ import annotations

from pathlib import Path

from tests.support.app import settle, type_and_send

CACHES = (
    "import os, pathlib as p\n"
    "os.makedirs('pkg/__pycache__', exist_ok=True); p.Path('pkg/__pycache__/m.cpython-311.pyc').write_bytes(b'x')\n"
    "os.makedirs('.pytest_cache/v/cache', exist_ok=True); p.Path('.pytest_cache/v/cache/lastfailed').write_text('{}')\n"
)


def turns(tmp: Path) -> list[dict]:
    script = tmp / "caches.py"
    script.write_text(CACHES)
    return [
        {
            "text": "Writing the notes.",
            "tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt", "content": "my notes\n"}}],
        },
        {
            "text": "Running the tests.",
            "tool_calls": [{"name": "shell_execute", "arguments": {"command": f"python3 {script}"}}],
        },
        {
            "text": "And once more, which changes nothing.",
            "tool_calls": [{"name": "shell_execute", "arguments": {"command": "true"}}],
        },
        {"text": "Done."},
    ]


async def test_undo_passes_over_a_test_runs_caches_to_the_change_a_person_made(
    app_for, workspace: Path, tmp_path: Path
) -> None:
    app = app_for(turns(tmp_path), "--no-approval")
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "write notes and test")
        await settle(pilot, app)
        assert (workspace / "notes.txt").exists() and (workspace / "pkg/__pycache__/m.cpython-311.pyc").exists()
        await type_and_send(pilot, app, "/undo")
        await settle(pilot, app)
        said = [str(w.render()) for w in app.transcript.query(".notice")][-1]
        assert not (workspace / "notes.txt").exists(), f"one press undid the person's change: {said}"
        assert not (workspace / "pkg/__pycache__/m.cpython-311.pyc").exists()
        assert said.startswith("undone: removed notes.txt"), said
        assert "cache file" in said and "only caches or nothing" in said
