"""The placement bake-off through Dagster: seed × strategy partitions of ``strategy_month`` run ``sco bakeoff run``
(the production controller on an embedded PostgreSQL) on a real Dagster instance, land as ClickHouse rows, and the
dbt model ``fct_strategy_comparison`` sums them up into the table ``sco bakeoff table`` prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from contracts.bakeoff import WATERFALL_POINTS
from orchestration import bakeoff
from orchestration.bakeoff import RunSettings, run_partition
from orchestration.errors import BakeoffError

from .helpers import Stack

SHORT = {"days": 0.1, "warmup_days": 0.25, "units": 4}  # minutes of CPU: the mechanism, not a month's figures
RECORD = Path(__file__).with_name("bakeoff_record.json")


def _fake_sco(tmp_path: Path, body: str) -> str:
    fake = tmp_path / "sco"
    fake.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    fake.chmod(0o755)
    return str(fake)


def test_a_partition_whose_command_fails_raises_bak010_with_its_last_lines(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bakeoff, "sco_executable",
                        lambda: _fake_sco(tmp_path, "print('RPL003 no PostgreSQL', file=sys.stderr); sys.exit(2)"))
    with pytest.raises(BakeoffError, match=r"^BAK010 seed 1 depth-first: .*exited 2: RPL003 no PostgreSQL"):
        run_partition("1", "depth-first", RunSettings())


def test_a_partition_that_prints_no_record_raises_bak011(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bakeoff, "sco_executable", lambda: _fake_sco(tmp_path, "print('{\"seed\": 1}')"))
    with pytest.raises(BakeoffError, match=r"^BAK011 seed 2 price-first: .*strategy"):
        run_partition("2", "price-first", RunSettings())


def test_a_partition_s_progress_reaches_the_log_while_the_command_still_runs(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the fake prints a progress line, then waits until that line reached the log: a runner that logs only when
    # the command has ended would never let it finish (the timeout fails the test, BAK010)
    seen = tmp_path / "seen"
    body = ("import os, time\nprint('seed 1 price-first:  10% after 60 s, ~540 s left', file=sys.stderr, flush=True)\n"
            f"while not os.path.exists({str(seen)!r}):\n    time.sleep(0.05)\n"
            "print(open(" + repr(str(RECORD)) + ").read())")
    monkeypatch.setattr(bakeoff, "sco_executable", lambda: _fake_sco(tmp_path, body))
    lines: list[str] = []

    class Log:
        def info(self, line: str) -> None:
            lines.append(line)
            seen.touch()

    record = run_partition("1", "price-first", RunSettings(timeout_s=120.0), log=Log())
    assert lines == ["seed 1 price-first:  10% after 60 s, ~540 s left"]
    assert record.strategy == "price-first" and record.net_planning_pct == 42.0


def test_a_partition_that_outlives_its_timeout_is_killed_and_raises_bak010(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bakeoff, "sco_executable", lambda: _fake_sco(tmp_path, "import time\ntime.sleep(600)"))
    with pytest.raises(BakeoffError, match=r"^BAK010 seed 1 depth-first: no record after 1 s"):
        run_partition("1", "depth-first", RunSettings(timeout_s=1.0))


@pytest.mark.slow
@pytest.mark.xdist_group("orchestration-history")  # the session's ClickHouse: its finance models are rebuilt here
def test_the_bakeoff_partitions_land_in_clickhouse_and_the_dbt_model_compares_them(stack: Stack,
                                                                                  tmp_path: Path) -> None:
    from dagster import AssetKey, AssetSelection, DagsterInstance, MultiPartitionKey, materialize

    from orchestration.defs.bakeoff.assets import strategy_month
    from orchestration.defs.finance.assets import finance_models
    from orchestration.resources import BakeoffSettings
    from sco.commands.bakeoff import render_table

    resources: dict[str, Any] = {**stack.resources(),
                                 "bakeoff": BakeoffSettings(**SHORT, revision="test-rev",
                                                            cache_dir=str(tmp_path / "traces"))}
    with DagsterInstance.ephemeral() as instance:
        for strategy in ("expected-cost", "price-first"):
            result = materialize([strategy_month], instance=instance, resources=resources,
                                 partition_key=MultiPartitionKey({"seed": "1", "strategy": strategy}))
            assert result.success
        done = instance.get_materialized_partitions(strategy_month.key)
        assert done == {"1|expected-cost", "1|price-first"}
        comparison = AssetKey(["finance", "fct_strategy_comparison"])
        built = materialize([finance_models(), strategy_month], instance=instance, resources=resources,
                            selection=AssetSelection.assets(comparison))
        assert built.success
    ch = stack.ch()
    rows = ch.rows("SELECT seed, strategy, days, revision, net_planning_pct FROM strategy_months FINAL "
                   "WHERE revision = 'test-rev' ORDER BY strategy")
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(1, "expected-cost", 0.1, "test-rev"),
                                                         (1, "price-first", 0.1, "test-rev")]
    c = ch.client()
    try:
        table = list(c.query("SELECT * FROM fct_strategy_comparison ORDER BY strategy").named_results())
    finally:
        c.close()
    assert [(t["strategy"], t["seeds"], t["revision"]) for t in table] == [("expected-cost", 1, "test-rev"),
                                                                          ("price-first", 1, "test-rev")]
    assert [round(t["net_planning_pct"], 6) for t in table] == [round(r[4], 6) for r in rows]
    assert table[1]["seeds_less_interrupted"] == 0  # price-first is never interrupted less than itself
    # where the saving went lands with each row and adds up, through the model too
    bars = list(WATERFALL_POINTS.values())
    stored = ch.rows(f"SELECT ceiling_pct, achieved_pts, {', '.join(bars)} FROM strategy_months FINAL "
                     "WHERE revision = 'test-rev' ORDER BY strategy")
    assert all(r[0] > 0 and r[0] - sum(r[2:]) == pytest.approx(r[1], abs=1e-6) for r in stored)
    assert [round(t["achieved_pts"], 6) for t in table] == [round(r[1], 6) for r in stored]
    printed = render_table(table)
    assert "expected-cost" in printed and ("PASS  shortfall" in printed or "FAIL  shortfall" in printed)
    assert "net ≥ price-first + 3 points" in printed
    assert "= achieved net" in printed and "expected-cost: the biggest bar is" in printed
    assert "within its own contract (worst seed:" in printed
