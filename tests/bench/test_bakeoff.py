"""bench.bakeoff keeps what it measured when asked: with ``--keep DIR`` a run's rows stay in DIR's ClickHouse, and a
later run adds its partitions' rows to them, so a bake-off stopped early (or run a seed at a time) loses nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.services]   # ClickHouse, Dagster runs, dbt, the replay


def _bakeoff(seed: int, keep: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "bench.bakeoff", "--days", "0.02", "--warmup-days", "0.2",
                           "--seeds", str(seed), "--strategies", "price-first", "--jobs", "1", "--keep", str(keep)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode in (0, 1), done.stderr[-3000:]   # 1: a verdict failed, the table was produced
    return done.stdout


def _seeds(table: str) -> int:
    row = next(line for line in table.splitlines() if line.startswith("price-first "))
    return int(row.split()[1])


def test_a_second_run_with_the_same_kept_directory_adds_its_seeds_to_the_table(tmp_path: Path) -> None:
    keep = tmp_path / "bakeoff"
    assert _seeds(_bakeoff(1, keep)) == 1
    assert (keep / "ch").is_dir() and (keep / "dagster").is_dir()
    assert _seeds(_bakeoff(2, keep)) == 2
