"""Undo from ``monkey web``: a checkpoint's preview, then the undo with ``monkey undo``'s refusals."""

from __future__ import annotations

from pathlib import Path

from tests.support.web import ANSWER, asgi_client, login, stored_task


async def test_a_checkpoint_previewed_then_undone_and_a_file_changed_since_refused(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    sid = await stored_task(workspace, monkey_home, tmp_path, ANSWER)
    other = await stored_task(workspace, monkey_home, tmp_path, [{"text": "nothing"}])
    async with asgi_client() as (client, _):
        await login(client)
        origin = {"origin": "http://127.0.0.1:8"}
        from monkey.checkpoints.api import Checkpoints

        [checkpoint] = [c.id for c in Checkpoints(workspace, home=monkey_home).list(sid)]
        preview = await client.get(f"/api/sessions/{sid}/checkpoints/{checkpoint[:8]}")
        assert preview.status_code == 200
        assert "+hi" in preview.json()["preview"] and "a.txt" in preview.json()["preview"]
        assert (await client.get(f"/api/sessions/{other}/checkpoints/{checkpoint}")).status_code == 404, (
            "another session's checkpoint"
        )
        assert (await client.get(f"/api/sessions/{sid}/checkpoints/nope")).status_code == 404
        url = f"/api/sessions/{sid}/checkpoints/{checkpoint}/undo"
        assert (await client.post(url)).status_code == 403, "a change from another origin"
        (workspace / "a.txt").write_text("mine now\n")
        refused = await client.post(url, headers=origin)
        assert refused.status_code == 409 and "changed since" in refused.json()["error"]
        assert refused.json()["conflicts"][0]["diff"]
        assert (workspace / "a.txt").read_text() == "mine now\n", "nothing was undone"
        (workspace / "a.txt").write_text("hi\n")
        done = await client.post(url, headers=origin)
        assert done.status_code == 200, done.text
        assert done.json()["undone"]["type"] == "undo_applied"
        assert done.json()["undone"]["removed"] == ["a.txt"]
        assert not (workspace / "a.txt").exists()
        again = await client.post(url, headers=origin)
        assert again.status_code == 409 and "nothing to undo" in again.json()["error"]
