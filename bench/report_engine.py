"""ADR-03's report engines against the production path on the same days ("one code path").

The baseline is the production controller over the simulated region itself (``sco simulate``'s engine: the
region's own reclaimer, room and forward calendar). Against it, on the trace recorded from the same region, seed
and days (what ``sco contracts report`` reads from ClickHouse):

- **report: controller over the history** — the production controller over a ``TraceRegion`` (the report's
  default engine, ``--replay-engine controller``);
- **report: replay-only model** — ``controllers.replay.replay`` (``--replay-engine model``).

Same contracts (``deploy/contracts``), claims sized as both commands size them, each workload's own strategy,
warm-up before the window. Printed per engine: interruptions per 100 instance-hours, wasted work, shortfall, net
saving (rate card and planning rates), the worst 5-minute loss, and each as a ratio (or a difference, for
percentages of money) to the baseline. No target: the figures say how far each report engine is from the path
that runs. Exit 2 when a figure cannot be produced.

    .venv/bin/python -m bench.report_engine [--seed 1] [--days 3] [--warmup-days 7] [--jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 10, 1, tzinfo=UTC)
ENGINES = ("production path (baseline)", "report: controller over the history", "report: replay-only model")


def _setup(seed: int, days: float, warmup: float, reclaimer: str) -> tuple[Any, list[Any], dict[str, int]]:
    from controllers.replay import disk_cache, size_claims
    from controllers.replay.from_region import cached_trace
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate import _compiled

    contracts = _compiled(ROOT / "deploy" / "contracts")
    trace = cached_trace(RegionConfig(seed=seed, strategy=reclaimer), START, days, warmup, disk_cache.cache_dir())
    claims = {c.workload: c.units for c in size_claims(trace, contracts, 40)}
    return trace, contracts, claims


def _run(engine: int, url: str | None, seed: int, days: float, warmup: float, reclaimer: str,
         setup: tuple[Any, list[Any], dict[str, int]]) -> tuple[Any, float]:
    """One engine in this process on the recorded ``setup`` (trace, contracts, claims): its summary and the CPU
    seconds it took."""
    import psycopg

    from controllers.replay import ReplayConfig, replay, summarise
    from controllers.replay.trace_region import replay_trace_through_controller
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate_controller import contract_ranker, one_native_thread, run_controller_engine

    trace, contracts, claims = setup
    began = time.process_time()
    if engine == 0:
        assert url is not None
        config = RegionConfig(seed=seed, strategy=reclaimer)
        out = run_controller_engine(url, config, START, days, contracts, claims, None, warmup)
    elif engine == 1:
        assert url is not None
        with one_native_thread(), psycopg.connect(url, autocommit=True) as conn:   # ranked as the report ranks
            out = replay_trace_through_controller(trace, {c.ref: c for c in contracts}, claims, conn,
                                                  ranker=contract_ranker(conn, "r1", contracts))
    else:
        out = replay(trace, contracts, claims, ReplayConfig())
    return summarise(ENGINES[engine], out), time.process_time() - began  # type: ignore[arg-type]


def _figures(s: Any) -> dict[str, float]:
    return {"interruptions %/h": s.interruption_rate_pct_h, "wasted %": s.wasted_pct,
            "shortfall %": s.shortfall_pct, "net % (rate card)": s.net_pct,
            "net % (planning)": s.net_planning_pct, "worst 5-min %": s.worst_step_loss_pct}


def _compare(name: str, base: float, x: float) -> str:
    if name.startswith("net"):
        return f"{x - base:+.1f} pts"
    return f"{x / base:.2f}×" if base else ("=" if x == base else "n/a (baseline 0)")


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    p = argparse.ArgumentParser(prog="bench.report_engine", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--days", type=float, default=3.0)
    p.add_argument("--warmup-days", type=float, default=7.0)
    p.add_argument("--jobs", type=int, default=2, help="engines run at once, each in its own process (2)")
    p.add_argument("--reclaimer", choices=("oldest", "newest", "best-fit", "random"), default="oldest",
                   help="how the simulated region's reclaimer picks victims (RegionConfig.strategy; default oldest, "
                        "the region's own); the history does not record it and the report draws uniformly")
    args = p.parse_args(argv)
    from sco.commands.simulate_controller import EmbeddedPostgres

    print(f"seed {args.seed}, {args.days:g} days after {args.warmup_days:g} of warm-up, reclaimer {args.reclaimer}, "
          "deploy/contracts, "
          f"each workload's own strategy; {args.jobs} at once", file=sys.stderr, flush=True)
    began = time.monotonic()
    setup = _setup(args.seed, args.days, args.warmup_days, args.reclaimer)   # recorded once, for all three
    print(f"  trace recorded ({time.monotonic() - began:.0f} s)", file=sys.stderr, flush=True)
    pg = EmbeddedPostgres()
    try:
        urls = [pg.database(), pg.database(), None]
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            jobs = [pool.submit(_run, n, urls[n], args.seed, args.days, args.warmup_days, args.reclaimer, setup)
                    for n in range(3)]
            done = []
            for n, job in enumerate(jobs):
                done.append(job.result())
                print(f"  {ENGINES[n]}: done ({done[-1][1]:.0f} s of CPU, {time.monotonic() - began:.0f} s wall)",
                      file=sys.stderr, flush=True)
    except Exception as exc:  # a figure that cannot be produced
        print(f"bench.report_engine: no figure: {exc}", file=sys.stderr)
        return 2
    finally:
        pg.close()
    base = _figures(done[0][0])
    print(f"\nADR-03 report engines against the production path, seed {args.seed}, {args.days:g} days, reclaimer "
          f"{args.reclaimer}")
    print(f"{'figure':<20} " + " ".join(f"{e[:36]:>38}" for e in ENGINES))
    for name, b in base.items():
        cells = [f"{b:.3f}"]
        for n in (1, 2):
            x = _figures(done[n][0])[name]
            cells.append(f"{x:.3f} ({_compare(name, b, x)})")
        print(f"{name:<20} " + " ".join(f"{c:>38}" for c in cells))
    print("CPU s: " + ", ".join(f"{ENGINES[n]} {done[n][1]:.0f}" for n in range(3)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
