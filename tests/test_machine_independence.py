"""The suite's screenshots do not depend on the machine's temporary folder.

A snapshot that shows (or counts the tokens of) a path under pytest's temporary folder
passes on the machine that recorded it and fails on one whose temporary folder has another
length. The snapshot tests run here once more, in a child pytest whose ``--basetemp`` is
much longer than the usual one, so such a test fails here, on any machine, rather than on
the next machine only.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import ROOT


@pytest.mark.xdist_group("snapshots")  # their one workspace path: not while a worker runs them
@pytest.mark.timeout(900)
def test_the_snapshots_pass_with_a_temporary_folder_of_another_length(tmp_path) -> None:
    basetemp = tmp_path / ("a-much-longer-temporary-folder-name-than-usual-" * 3) / "base"
    basetemp.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "snapshots",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "--basetemp",
            str(basetemp),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
    assert proc.returncode == 0, f"snapshots depend on the temporary folder's path:\n{tail}"
    assert " passed" in proc.stdout
