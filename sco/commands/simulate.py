"""``sco simulate``: replay the simulated region's history through the production controller (ADR-03), for one
strategy or all four side by side on the same trace (``--engine replay``: the fast replay-only model)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import CliError
from .report import render_table

__all__ = ["CPU_S_PER_DAY", "Pace", "print_waterfalls", "progress_bar", "register", "waterfall_lines"]

STRATEGIES = ("expected-cost", "depth-first", "price-first", "capacity-optimised", "single-cheapest")
CPU_S_PER_DAY = 35  # the controller engine, 14 workloads × 40 units: 15-20 min of wall a 30-day month (benchmarks.md)


def register(sub: Any) -> None:
    """Add ``sco simulate`` to the parser."""
    p = sub.add_parser("simulate", help="replay N days of pool history with the real planner; compare strategies")
    p.add_argument("--days", type=float, default=30.0, help="days to replay (default 30)")
    p.add_argument("--warmup-days", type=float, default=7.0, help="history the rankings learn from first (7)")
    p.add_argument("--strategy", choices=(*STRATEGIES, "contract", "compare"), default="contract",
                   help="placement strategy: each contract's own (default), one for all, or compare all four")
    p.add_argument("--contracts", type=Path, default=Path(__file__).resolve().parents[2] / "deploy" / "contracts")
    p.add_argument("--units", type=int, default=40, help="units each workload claims (default 40)")
    p.add_argument("--seed", type=int, default=1, help="simulated region seed")
    p.add_argument("--start", default="2026-10-01", help="first replayed day, UTC (YYYY-MM-DD), or a time in it "
                   "(YYYY-MM-DDTHH:MM): the region's demand follows the hour of day")
    p.add_argument("--engine", choices=("controller", "replay"), default="controller",
                   help="controller (default): the production controller (observe → decide → apply, scorer, "
                        "floor keeper, fallback arbiter, ledger, breaker) on an embedded PostgreSQL, about "
                        f"{CPU_S_PER_DAY} s of CPU a simulated day a strategy; replay: the planner in the "
                        "replay-only model, minutes for a month but not the production path (its figures differ)")
    p.add_argument("--jobs", type=int, default=1,
                   help="--engine controller: replay up to N strategies at once, each in its own process (1)")
    p.add_argument("--rank-latency-min", type=float, default=0.0,
                   help="--engine controller: minutes from a ranking's inputs to its being in force (0, at once: "
                        "the figures in docs/benchmarks.md; the ranking asset's run takes a few in production; with "
                        "a latency a worker process computes the rankings beside the replay)")
    p.set_defaults(handler=_simulate)


def progress_bar(label: str) -> Any:
    """A bar rewritten in place on a terminal; one line a quarter otherwise (no carriage returns in a log). Each
    shows the seconds so far and, from the second report, an estimate of those left (``Pace``)."""
    started, tty, last, pace = time.monotonic(), sys.stderr.isatty(), [-1], Pace()

    def show(done: float) -> None:
        seconds = time.monotonic() - started
        left = pace(seconds, done)
        if tty:
            bar = "#" * int(done * 30)
            print(f"\r  {label:<20} [{bar:<30}] {done:4.0%} {seconds:5.0f} s{left}", end="", file=sys.stderr,
                  flush=True)
        elif int(done * 4) > last[0]:
            last[0] = int(done * 4)
            print(f"  {label:<20} {last[0] * 25:3d} % {seconds:5.0f} s{left}", file=sys.stderr, flush=True)
    return show


class Pace:
    """The time left at the pace since the first report (``", about 12 min left"``): what came before it (set-up,
    the warm-up, reading the trace) is not the replay's pace — counted in, a month's first report said 75 min for
    what took 22. Nothing at the first report, nor once all is done."""

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None

    def __call__(self, seconds: float, done: float) -> str:
        """The words for the time left after ``seconds``, with the share ``done``."""
        if self.first is None:
            self.first = (seconds, done)
            return ""
        s0, d0 = self.first
        if done <= d0 or done >= 1:
            return ""
        left = (seconds - s0) * (1 - done) / (done - d0)
        return f", about {left / 60:.0f} min left" if left >= 90 else f", about {left:.0f} s left"


def _simulate(args: argparse.Namespace) -> int:
    start = _checked_start(args)
    from controllers.replay import disk_cache, size_claims
    from controllers.replay.from_region import cached_trace
    from controllers.simregion.config import RegionConfig

    contracts = _compiled(args.contracts)
    began = time.monotonic()
    print(f"recording {args.days:g} days (+{args.warmup_days:g} warm-up) of the simulated region, seed {args.seed}…",
          file=sys.stderr)
    trace = cached_trace(RegionConfig(seed=args.seed), start, args.days, args.warmup_days, disk_cache.cache_dir())
    print(f"  {len(trace.reclaims)} reclaim waves over {len(trace.pools)} pools "
          f"({time.monotonic() - began:.0f} s)", file=sys.stderr)
    sized = size_claims(trace, contracts, args.units)
    claims = {c.workload: c.units for c in sized}
    if args.engine == "controller":
        runs = len(STRATEGIES) if args.strategy == "compare" else 1
        minutes = CPU_S_PER_DAY * args.days * runs / min(args.jobs, runs) / 60
        print(f"the production controller, a pass a virtual minute: about {minutes:.0f} min of wall on an idle core "
              f"({runs} strateg{'ies' if runs > 1 else 'y'}, --jobs {args.jobs}); --engine replay is the fast "
              f"approximation", file=sys.stderr)
    run = _engine(args, contracts, claims, start)
    try:
        summaries, falls = _run_strategies(args, trace, contracts, claims, run)
    finally:
        if run is not None:
            run.close()
    print(f"\nReplay: {trace.description}; {len(contracts)} workloads × {args.units} units asked; "
          f"rate-card saving (net of reclaimable, floor and fallback spend and wasted work)")
    for c in sized:
        if c.note:
            print(f"  claim {c.note}")
    _report(args, summaries, run)
    print_waterfalls(falls)
    return 0


def _checked_start(args: argparse.Namespace) -> datetime:
    """The options' bounds, and the start day."""
    if not 0 < args.days <= 400:
        raise CliError(f"--days must be between 0 and 400, got {args.days:g}")
    if args.warmup_days < 0:
        raise CliError(f"--warmup-days must be 0 or more, got {args.warmup_days:g}")
    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if args.units < 1:
        raise CliError(f"--units must be at least 1, got {args.units}")
    if not 0 <= args.rank_latency_min <= 60:
        raise CliError(f"--rank-latency-min must be between 0 and 60 minutes, got {args.rank_latency_min:g}")
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M"):
        try:
            return datetime.strptime(args.start, form).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise CliError(f"--start must be YYYY-MM-DD or YYYY-MM-DDTHH:MM, got {args.start!r}")


def _compiled(repo: Any) -> list[Any]:
    """The contracts of the repository, or a one-line error when any does not compile."""
    from contracts.compiler import RepoError, check_repo

    try:
        result = check_repo(repo)
    except RepoError as exc:
        raise CliError(str(exc)) from None
    if result.errors:
        raise CliError(f"{len(result.errors)} contract(s) do not compile; run `sco contracts check {repo}`", code=1)
    return [w.contract for w in result.workloads]


def _run_strategies(args: argparse.Namespace, trace: Any, contracts: list[Any], claims: dict[str, int],
                    run: Any) -> tuple[list[Any], dict[str, dict[str, float]]]:
    """One summary per strategy asked, on the replay model (``run`` None) or the controller engine, and each
    strategy's waterfall (``controllers.replay.waterfall``)."""
    from controllers.replay.waterfall import waterfall
    from controllers.simregion.economics import PLANNING_RATE_SHARE

    falls: dict[str, dict[str, float]] = {}
    floors = {c.workload: c.floor_pct for c in contracts}
    from controllers.planning import Strategy
    from controllers.replay import ReplayConfig, replay, summarise

    summaries = []
    names = STRATEGIES if args.strategy == "compare" else (args.strategy,)
    ahead = run.parallel(names, args.jobs) if run is not None and args.jobs > 1 and len(names) > 1 else {}
    for name in names:
        strategy = None if name == "contract" else Strategy(name)
        if name in ahead:
            outcomes = ahead[name]
        elif run is None:
            outcomes = replay(trace, contracts, claims, ReplayConfig(strategy=strategy), progress=progress_bar(name))
        else:
            outcomes = run(strategy, progress_bar(name))
        if sys.stderr.isatty():
            print(file=sys.stderr)
        if args.strategy != "compare":
            _print_workloads(outcomes, contracts)
        summaries.append(summarise(strategy or Strategy.EXPECTED_COST, outcomes))
        falls[name] = waterfall(outcomes, floors, PLANNING_RATE_SHARE)
    return summaries, falls


def print_waterfalls(falls: Mapping[str, Mapping[str, float]],
                     title: str = "Where the saving goes (points of the wanted work's guaranteed value, "
                                  "planning rates):") -> None:
    """Print ``waterfall_lines``; nothing when no strategy has a waterfall."""
    lines = waterfall_lines(falls, title)
    if lines:
        print("\n" + "\n".join(lines))


def waterfall_lines(falls: Mapping[str, Mapping[str, float]], title: str) -> list[str]:
    """Where the saving goes, per strategy: from the ceiling the floors allow to the achieved net (points of the
    wanted work's guaranteed value, planning rates), and the biggest bar; a strategy without one is left out."""
    from controllers.replay.waterfall import ITEMS, NOT_MODELLED

    names = [n for n, w in falls.items() if w]
    if not names:
        return []
    rows = [["ceiling the floors allow", *(f"{falls[n]['ceiling']:.1f}" for n in names)]]
    rows += [[f"− {k}" + (" (not modelled)" if k in NOT_MODELLED else ""), *(f"{falls[n][k]:.1f}" for n in names)]
             for k in (*ITEMS, *NOT_MODELLED)]
    rows.append(["= achieved net", *(f"{falls[n]['net']:.1f}" for n in names)])
    lines = [title, render_table(["", *names], rows)]
    for n in names:
        biggest = max(ITEMS, key=lambda k: falls[n][k])
        lines.append(f"  {n}: the biggest bar is {biggest} ({falls[n][biggest]:.1f} points)")
    return lines


def _report(args: argparse.Namespace, summaries: list[Any], run: Any) -> None:
    """The comparison table, the region model's assumptions, the engine's approximations and the verdicts."""
    from controllers.planning import Strategy
    from controllers.replay import verdicts
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.economics import assumptions

    rows = [[("ours: " if s.strategy is Strategy.EXPECTED_COST else "") + str(s.strategy), str(s.interruptions),
             f"{s.interruption_rate_pct_h:.2f}", f"{s.wasted_pct:.2f}%", str(s.fallback_starts),
             f"{s.shortfall_pct:.2f}%", f"€{s.cost:,.0f}", f"€{s.net_saving:,.0f}", f"{s.net_pct:.1f}%",
             f"{s.net_planning_pct:.1f}%", f"€{s.depth_premium:,.0f}", f"{s.worst_step_loss_pct:.0f}%"]
            for s in summaries]
    print(render_table(["strategy", "interruptions", "%/h", "wasted", "fallbacks", "shortfall", "cost",
                        "net saving", "net %", "net % planning", "depth premium", "worst 5-min loss"], rows))
    print("worst 5-min loss: the largest share of any one workload's claim lost in one 5-minute step; the caps hold "
          "an ordinary wave to 15 % a pool and 30 % a group, a hall-wide reclaim takes both of a hall's "
          "aggregates, a single pool can lose it all")
    print("\nThe region model (net % planning prices reclaimable hours at the planning rate):")
    for what, model, planning in assumptions(RegionConfig(seed=args.seed)):
        print(f"  {what}: {model}  [planning: {planning}]")
    if args.engine == "controller":
        from controllers.replay.through_controller import APPROXIMATIONS
        print(f"Engine: the production controller. Approximations: {APPROXIMATIONS}.")
        print("  the replay's own embedded PostgreSQL runs with fsync, synchronous_commit and full_page_writes off "
              "(its databases are thrown away); each pass's statements go in psycopg's pipeline mode")
        print(f"  ranking latency: {_latency_note(args.rank_latency_min)}")
        kinds = ("placed", "replaced", "launch-failed", "excluded", "excluded-full", "lost", "fallback-started",
                 "breaker-tripped", "passes-holding-actions")
        for name, seen in run.diagnostics.items():
            print(f"  {name}: " + ", ".join(f"{k} {seen.get(k, 0)}" for k in kinds))
    else:
        print("Engine: the replay-only model (--engine replay), not the production path: the default engine runs "
              "the production controller. Approximations: no boot time (a lost instance is replaced at the next "
              "5-minute step), no scheduler (claims are whole units), a plan change moves capacity without cost.")
    print()
    for label, ok, figure in verdicts(summaries):
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {figure}")


def _engine(args: argparse.Namespace, contracts: list[Any], claims: dict[str, int], start: datetime) -> Any:
    """None for the replay model; for ``--engine controller`` a callable (strategy, progress) -> outcomes on one
    embedded PostgreSQL, a fresh migrated database per strategy, with ``close()``."""
    if args.engine != "controller":
        return None
    import signal

    from controllers.simregion.config import RegionConfig

    from .simulate_controller import EmbeddedPostgres, run_controller_engine, run_in_processes

    latency = timedelta(minutes=args.rank_latency_min)
    pg = EmbeddedPostgres()
    # a SIGTERM ends the run through ``finally`` (``Run.close``), so the embedded PostgreSQL is stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    class Run:
        def __init__(self) -> None:
            self.diagnostics: dict[str, dict[str, int]] = {}

        def __call__(self, strategy: Any, progress: Any) -> Any:
            seen = self.diagnostics[str(strategy or "contract")] = {}
            return run_controller_engine(pg.database(), RegionConfig(seed=args.seed), start, args.days, contracts,
                                         claims, strategy, args.warmup_days, progress, seen, rank_latency=latency)

        def parallel(self, names: Any, jobs: int) -> dict[str, Any]:
            """The strategies in up to ``jobs`` processes at once, one progress line a report."""
            shown = _progress_line(names)
            try:
                done = run_in_processes(pg, names, jobs, RegionConfig(seed=args.seed), start, args.days, contracts,
                                        claims, args.warmup_days, shown, rank_latency=latency)
            except RuntimeError as exc:
                raise CliError(str(exc)) from None
            for name in names:   # in the table's order, whichever finished first
                self.diagnostics[name] = done[name][1]
            return {name: outcomes for name, (outcomes, _) in done.items()}

        def close(self) -> None:
            pg.close()
    return Run()


def _latency_note(minutes: float) -> str:
    """How long after its inputs the replay put each ranking in force."""
    if not minutes:
        return "none, each ranking in force at the pass that computed it (--rank-latency-min 0)"
    return (f"{minutes:g} min from a ranking's inputs to its being in force, the first at once; computed by a "
            "worker process beside the replay")


def _progress_line(names: Any) -> Any:
    """``depth-first 25 % · price-first 50 % · ... 120 s``: rewritten in place on a terminal, a line a change of
    quarter otherwise."""
    tty, last, pace = sys.stderr.isatty(), [""], Pace()

    def show(shares: Any, seconds: float) -> None:
        line = " · ".join(f"{n} {shares.get(n, 0.0):4.0%}" for n in names)
        quarters = " ".join(str(int(shares.get(n, 0.0) * 4)) for n in names)
        left = pace(seconds, sum(shares.get(n, 0.0) for n in names) / max(1, len(names)))
        if tty:
            print(f"\r  {line}  {seconds:5.0f} s{left}", end="", file=sys.stderr, flush=True)
        elif quarters != last[0]:
            last[0] = quarters
            print(f"  {line}  {seconds:5.0f} s{left}", file=sys.stderr, flush=True)
    return show


def _print_workloads(outcomes: dict[str, Any], contracts: list[Any]) -> None:
    rows = []
    for o in sorted(outcomes.values(), key=lambda o: (o.tier, o.workload)):
        rows.append([o.workload, o.tier, str(o.interruptions), f"{o.interruption_rate_pct_h:.2f}",
                     f"{o.wasted_pct:.2f}%", str(o.fallback_starts), f"{o.shortfall_unit_hours:.1f}",
                     f"€{o.net_saving:,.0f}", f"€{o.depth_premium.quantize(o.net_saving):,.0f}"])
    print(render_table(["workload", "tier", "interruptions", "%/h", "wasted", "fallbacks", "shortfall u·h",
                        "net saving", "depth premium"], rows))
    from controllers.replay import workload_verdicts

    judged = workload_verdicts(outcomes, {c.workload: c for c in contracts})
    print(f"\nEach workload against its own contract (declared tolerance, wasted ≤ 3 % of its reclaimable hours): "
          f"{sum(v.passed for v in judged)} of {len(judged)} PASS")
    for v in judged:
        print(f"  {v.line()}")
