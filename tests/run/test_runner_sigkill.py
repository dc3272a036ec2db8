"""SIGKILL at seeded random moments (its own file: the longest test, so a test worker runs it beside the rest)."""

import random
import signal
import sqlite3
import subprocess
import time

import pytest

from tests.helpers import cli_command, unit_rows


@pytest.mark.e2e
@pytest.mark.processes
def test_sigkill_at_random_points_never_leaves_a_partial_unit(tmp_path):
    """Killed at seeded random moments (start-up, mid-unit, mid-write): every stored unit is whole,
    and the final rerun completes the set with no duplicates."""
    cmd, env, store = cli_command(tmp_path, "gla", samples=8)
    rng = random.Random(7)
    for _ in range(3):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(4.0, 14.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if store.exists():
            for _, status, samples in unit_rows(store):
                assert status == "complete" and samples == 8
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT task || context_length) FROM units").fetchone() == (6, 6)
    assert db.execute("SELECT COUNT(*) FROM metrics WHERE metric = 'score'").fetchone()[0] == 6
