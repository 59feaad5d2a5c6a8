"""The placement bake-off through Dagster, end to end: seeds × strategies as partitions of ``strategy_month`` on a
Dagster instance of its own (``DAGSTER_HOME`` in a temporary directory, SQLite storage), each partition its own
Dagster run in its own process — ``sco bakeoff run``, the production controller on an embedded PostgreSQL — up to
``--jobs`` at a time; the rows in a fresh ClickHouse front end; then dbt builds ``fct_strategy_comparison`` from
them (the ``finance_models`` asset) and the table is printed as ``sco bakeoff table`` prints it, from the model,
with its PASS/FAIL lines.

    .venv/bin/python -m bench.bakeoff [--days 1] [--seeds 1,2,3,4]
        [--strategies expected-cost,depth-first,price-first,single-cheapest] [--jobs 2] [--revision REV]
        [--keep DIR]

``--keep DIR`` keeps the Dagster instance and the ClickHouse data in ``DIR`` instead of a temporary directory: a
bake-off stopped early keeps the rows of the partitions that ended, and a later run with the same ``DIR`` and
revision adds its partitions' rows to them (the table is the model over all of them).

The baseline the verdicts name is price-first under the same caps, measured in the same run. Progress (each
partition's start and end, with its wall) goes to stderr. Exit 0 when every verdict passes, 1 on a FAIL, 2 when
a partition, the model or a service fails (the figures cannot be produced).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals

ROOT = Path(__file__).resolve().parents[1]


def _partition(clickhouse_url: str, seed: str, strategy: str, settings: dict[str, Any]
               ) -> tuple[float, dict[str, Any]]:
    """Materialise one partition of ``strategy_month`` as its own run on the instance at ``$DAGSTER_HOME``; its
    wall and the figures its materialisation recorded (printed as each partition ends, so a month of runs that
    fails later has not lost them)."""
    from dagster import DagsterInstance, MultiPartitionKey, materialize

    from orchestration.defs.bakeoff.assets import strategy_month
    from orchestration.resources import BakeoffSettings, ClickHouseResource

    started = time.perf_counter()
    with DagsterInstance.get() as instance:
        result = materialize([strategy_month], instance=instance, raise_on_error=False,
                             partition_key=MultiPartitionKey({"seed": seed, "strategy": strategy}),
                             resources={"clickhouse": ClickHouseResource(url=clickhouse_url),
                                        "bakeoff": BakeoffSettings(**settings)})
    if not result.success:
        raise RuntimeError(f"seed {seed} {strategy}: the run failed (dagster run {result.run_id})")
    (mat,) = result.asset_materializations_for_node("strategy_month")
    return time.perf_counter() - started, {k: v.value for k, v in mat.metadata.items()}


def _comparison(clickhouse_url: str, revision: str) -> list[dict[str, Any]]:
    """Build ``fct_strategy_comparison`` (dbt, through the ``finance_models`` asset) and read it for ``revision``."""
    from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

    from orchestration.defs.bakeoff.assets import strategy_month
    from orchestration.defs.finance.assets import dbt_resource, finance_models
    from orchestration.resources import BakeoffSettings, ClickHouseResource

    ch = ClickHouseResource(url=clickhouse_url)
    with DagsterInstance.get() as instance:
        built = materialize([finance_models(), strategy_month], instance=instance, raise_on_error=False,
                            resources={"clickhouse": ch, "dbt": dbt_resource(), "bakeoff": BakeoffSettings()},
                            selection=AssetSelection.assets(AssetKey(["finance", "fct_strategy_comparison"])))
    if not built.success:
        raise RuntimeError(f"dbt could not build fct_strategy_comparison (dagster run {built.run_id})")
    c = ch.client()
    try:
        return list(c.query("SELECT * FROM fct_strategy_comparison WHERE revision = {r:String} ORDER BY strategy",
                            parameters={"r": revision}).named_results())
    finally:
        c.close()


def _run_all(url: str, args: argparse.Namespace, settings: dict[str, Any]) -> None:
    """Every partition, ``--jobs`` at a time; progress on stderr."""
    todo = [(s, st) for s in args.seeds.split(",") for st in args.strategies.split(",")]
    from dagster import DagsterInstance

    with DagsterInstance.get():   # the storage made once here: two runs making it at once stamp two schema heads
        pass
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        running = {pool.submit(_partition, url, s, st, settings): (s, st) for s, st in todo}
        for done, fut in enumerate(as_completed(running), start=1):
            seed, strategy = running[fut]
            wall, figures = fut.result()
            shown = " ".join(f"{k}={v:.4g}" for k, v in figures.items() if isinstance(v, int | float))
            print(f"[{time.perf_counter() - began:6.0f} s] {done}/{len(todo)} seed {seed} {strategy}: "
                  f"{wall:.0f} s  {shown}", file=sys.stderr, flush=True)


@contextmanager
def _workdir(keep: Path | None) -> Iterator[str]:
    """``keep`` (created when missing, kept afterwards), or a temporary directory removed afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield str(keep)
        return
    with tempfile.TemporaryDirectory(prefix="sco-bakeoff-") as tmp:
        yield tmp


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()   # a timeout's SIGTERM stops the servers this bench starts
    p = argparse.ArgumentParser(prog="bench.bakeoff")
    p.add_argument("--days", type=float, default=1.0, help="days each partition replays (1; ADR-03's month: 30)")
    p.add_argument("--warmup-days", type=float, default=7.0)
    p.add_argument("--units", type=int, default=40)
    p.add_argument("--seeds", default="1,2,3,4")
    p.add_argument("--strategies", default="expected-cost,depth-first,price-first,single-cheapest")
    p.add_argument("--jobs", type=int, default=2, help="partitions at a time (one process each)")
    p.add_argument("--revision", default="bench", help="the revision the rows are stored under")
    p.add_argument("--keep", type=Path, default=None,
                   help="keep the Dagster instance and ClickHouse data here (a later run adds to them)")
    args = p.parse_args(argv)

    from sco.commands.bakeoff import render_table
    from sco.stack.services import start_clickhouse, stop_pid
    from stores.clickhouse import client
    from stores.migrate import migrate_clickhouse

    settings = {"days": args.days, "warmup_days": args.warmup_days, "units": args.units,
                "revision": args.revision, "cache_dir": str(Path.home() / ".cache" / "sco" / "bakeoff-traces")}
    with _workdir(args.keep) as tmp:
        home = Path(tmp) / "dagster"
        home.mkdir(exist_ok=True)
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")   # SQLite storage here, no telemetry
        os.environ["DAGSTER_HOME"] = str(home)   # this process's instance, and the workers' (they inherit it)
        server = start_clickhouse(Path(tmp) / "ch")
        try:
            c = client(server.url)
            migrate_clickhouse(c)
            c.close()
            started = time.perf_counter()
            try:
                _run_all(server.url, args, settings)
                rows = _comparison(server.url, args.revision)
            except Exception as exc:   # a figure that cannot be produced
                print(f"FAIL  the bake-off did not complete: {exc}", file=sys.stderr)
                return 2
            wall = time.perf_counter() - started
        finally:
            stop_pid(server.pid)
    print(f"{len(args.seeds.split(','))} seeds × {len(args.strategies.split(','))} strategies, {args.days:g} day(s) "
          f"each after {args.warmup_days:g} of warm-up, {args.jobs} at a time: {wall / 60:.1f} min of wall "
          f"(partitions and the dbt model), load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    table = render_table(rows)
    print(table)
    return 1 if "FAIL" in table else 0


if __name__ == "__main__":
    raise SystemExit(main())
