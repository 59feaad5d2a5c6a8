"""``sco bakeoff``: the placement bake-off, one strategy-month at a time.

    sco bakeoff run --seed 1 --strategy expected-cost --days 30 [--out month.json]
    sco bakeoff table

``run`` replays one seed × strategy through the production controller (``sco.bakeoff.month``) and prints its
``StrategyMonth`` record as one JSON line (what the Dagster ``strategy_month`` partition runs and stores);
progress with an estimate of the time left goes to stderr. ``table`` prints the comparison the dbt model
``fct_strategy_comparison`` holds: per strategy the mean over seeds, and PASS/FAIL against the targets.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import CliError

__all__ = ["eta_progress", "register"]

DEFAULT_CONTRACTS = Path(__file__).resolve().parents[2] / "deploy" / "contracts"
TARGETS = {"shortfall_pct": 0.1, "wasted_pct": 3.0, "net_planning_pct": 45.0, "lead_points": 3.0}


def register(sub: Any) -> None:
    """Add ``sco bakeoff run|table``."""
    p = sub.add_parser("bakeoff", help="the placement bake-off: strategy-months through the production controller")
    bsub = p.add_subparsers(dest="bakeoff_command", metavar="SUBCOMMAND")
    bsub.required = True
    r = bsub.add_parser("run", help="replay one seed × strategy and print its record (JSON)")
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--strategy", required=True, choices=("expected-cost", "depth-first", "price-first",
                                                         "single-cheapest", "capacity-optimised"))
    r.add_argument("--days", type=float, default=30.0, help="days replayed (30)")
    r.add_argument("--warmup-days", type=float, default=7.0, help="history the rankings learn from first (7)")
    r.add_argument("--units", type=int, default=40, help="units each workload asks (40)")
    r.add_argument("--rate", type=float, default=4.0, help="reclaimable nodes reclaimed per hour, %% (4)")
    r.add_argument("--start", default="2026-10-01", help="first replayed day, UTC (YYYY-MM-DD)")
    r.add_argument("--contracts", type=Path, default=DEFAULT_CONTRACTS, help="the contract repository")
    r.add_argument("--cache", type=Path, default=Path(".sco/bakeoff-traces"), help="recorded regions, by inputs")
    r.add_argument("--revision", default="", help="the code or contract revision replayed (stored with the row)")
    r.add_argument("--out", type=Path, help="write the record here too")
    r.set_defaults(handler=_run)
    t = bsub.add_parser("table", help="print the comparison from fct_strategy_comparison")
    t.add_argument("--clickhouse-url", default="", help="ClickHouse (default: SCO_CLICKHOUSE_URL, then the stack)")
    t.set_defaults(handler=_table)


def eta_progress(label: str, every_s: float = 10.0) -> Any:
    """A progress callback (fraction done) printing a line to stderr at most every ``every_s`` seconds, with the
    elapsed time and an estimate of what is left (linear in the fraction, which is simulated time)."""
    started, last = time.monotonic(), [float("-inf")]

    def show(done: float) -> None:
        now = time.monotonic()
        if now - last[0] < every_s and done < 1.0:
            return
        last[0] = now
        elapsed = now - started
        left = f", ~{elapsed * (1 - done) / done:.0f} s left" if 0 < done < 1 else ""
        print(f"{label}: {done:4.0%} after {elapsed:.0f} s{left}", file=sys.stderr, flush=True)
    return show


def _run(args: argparse.Namespace) -> int:
    from contracts.compiler import RepoError, check_repo

    from ..bakeoff.month import MonthSpec, strategy_month

    for name in ("days", "units", "rate"):
        if getattr(args, name) <= 0:
            raise CliError(f"BAK001 --{name} must be positive, got {getattr(args, name)}; e.g. --{name} 30")
    try:
        start = datetime.strptime(args.start, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise CliError(f"BAK002 --start must be YYYY-MM-DD, got {args.start!r}") from None
    try:
        result = check_repo(args.contracts)
    except RepoError as exc:
        raise CliError(str(exc)) from None
    if result.errors or not result.workloads:
        raise CliError(f"BAK003 {args.contracts}: {len(result.errors)} contract(s) do not compile, "
                       f"{len(result.workloads)} do; run `sco contracts check {args.contracts}`", code=1)
    spec = MonthSpec(seed=args.seed, strategy=args.strategy, days=args.days, warmup_days=args.warmup_days,
                     start=start, units=args.units, rate_pct_h=args.rate, revision=args.revision)
    label = f"seed {args.seed} {args.strategy}"
    print(f"{label}: recording the region and replaying {args.days:g} days through the controller", file=sys.stderr)
    record = strategy_month(spec, [w.contract for w in result.workloads], args.cache, eta_progress(label))
    line = record.model_dump_json()
    if args.out:
        args.out.write_text(line + "\n")
    print(line)
    return 0


def _table(args: argparse.Namespace) -> int:
    from stores.clickhouse import client
    from stores.config import resolve_url

    c = client(resolve_url("clickhouse", args.clickhouse_url or None))
    try:
        rows = c.query("SELECT * FROM fct_strategy_comparison ORDER BY strategy").named_results()
        rows = list(rows)
    finally:
        c.close()
    if not rows:
        raise CliError("BAK004 fct_strategy_comparison is empty: materialise the bakeoff job first "
                       "(dagster job execute -j bakeoff, one run per partition)", code=1)
    print(render_table(rows))
    return 0


def render_table(rows: list[dict[str, Any]], ours: str = "expected-cost", baseline: str = "price-first") -> str:
    """The comparison (one row per strategy, means over seeds) and the verdicts against the targets."""
    head = (f"{'strategy':<18} {'seeds':>5} {'interr. %/h':>11} {'net % (plan)':>12} {'net % (card)':>12} "
            f"{'shortfall %':>11} {'wasted %':>9} {'worst 5-min':>11} {'ceiling %':>9}")
    lines = [head, "-" * len(head)]
    by = {r["strategy"]: r for r in rows}
    for r in rows:
        lines.append(f"{r['strategy']:<18} {r['seeds']:>5} {r['interruptions_pct_h']:>11.2f} "
                     f"{r['net_planning_pct']:>12.1f} {r['net_pct']:>12.1f} {r['max_shortfall_pct']:>11.3f} "
                     f"{r['max_wasted_pct']:>9.2f} {r['worst_step_pct']:>10.0f}% {r['ceiling_pct']:>9.1f}")
    if ours in by:
        o = by[ours]
        lines.append("")
        lines.append(_verdict("shortfall ≤ 0.1 % (worst seed)", o["max_shortfall_pct"] <= TARGETS["shortfall_pct"]))
        lines.append(_verdict("wasted ≤ 3 % (worst seed)", o["max_wasted_pct"] <= TARGETS["wasted_pct"]))
        lines.append(_verdict(f"mean net (planning) ≥ {TARGETS['net_planning_pct']:g} %",
                              o["net_planning_pct"] >= TARGETS["net_planning_pct"]))
        if baseline in by:
            b = by[baseline]
            lead = o["net_planning_pct"] - b["net_planning_pct"]
            lines.append(_verdict(f"net ≥ {baseline} + {TARGETS['lead_points']:g} points (mean; {lead:+.1f})",
                                  lead >= TARGETS["lead_points"]))
            lines.append(_verdict(f"interruptions/h below {baseline} on every seed ({o['seeds_less_interrupted']} "
                                  f"of {o['seeds']} against it)", o["seeds_less_interrupted"] == o["seeds"]))
        if "max_workloads_outside" in o:
            lines.append(_verdict(f"every workload within its own contract (worst seed: {o['max_workloads_outside']} "
                                  "outside)", o["max_workloads_outside"] == 0))
            lines += [f"      {line}" for line in str(o["outside_worst_seed"]).splitlines() if line]
    return "\n".join(lines + _waterfalls(rows))


def _waterfalls(rows: list[dict[str, Any]]) -> list[str]:
    """The model's waterfall per strategy (means over seeds), as ``sco simulate`` prints one; none for a model
    built before the waterfall was stored."""
    from contracts.bakeoff import WATERFALL_POINTS
    from controllers.replay.waterfall import NOT_MODELLED

    from .simulate import waterfall_lines

    falls = {r["strategy"]: {"ceiling": r["ceiling_pct"], "net": r["achieved_pts"],
                             **{item: r[field] for item, field in WATERFALL_POINTS.items()},
                             **dict.fromkeys(NOT_MODELLED, 0.0)}
             for r in rows if all(field in r for field in (*WATERFALL_POINTS.values(), "achieved_pts"))}
    lines = waterfall_lines(falls, "Where the saving goes (points of the wanted work's guaranteed value, planning "
                                   "rates, means over seeds):")
    return ["", *lines] if lines else []


def _verdict(what: str, ok: bool) -> str:
    return f"{'PASS' if ok else 'FAIL'}  {what}"
