"""The replay through the production controller: seconds a pass and a strategy-day, this tree against a
baseline tree (default: ``main``, exported with ``git archive``) in the same run, and whether both decided the same.

Each side runs in its own process, the same command on its own code: the full simulated region (seed 1, 231 pools,
the repository's contracts, claims sized as ``sco simulate`` sizes them) replayed ``--hours`` through one
production controller per partition on a fresh embedded PostgreSQL, strategy depth-first (``--strategy``: expected-cost
reads the forecast, so its hash covers the forecast too), a pass every 60 s of
virtual time. A pass is one replay pass (both partitions' controllers, the region, the tallies); the warm-up (7
days of the region alone) and the set-up are timed apart. Wall and CPU (``time.process_time`` of the replaying
process; PostgreSQL's own CPU is not in it) are printed side by side: the machine may be shared.

Round trips: every exchange with PostgreSQL goes through psycopg's ``Connection.wait`` (a statement outside a
pipeline, a pipeline's sync, a fetch); a call that waits for the server to answer is one, counted from the first
pass on: all of the replay's (the controllers', the outbox relay's, the operator's, the ranker's) and the
controllers' apart. The backend's voluntary context switches (it waited, mostly for the client's next message) are
printed beside them.

Decisions: the outbox (every event's kind, workload, pool, instance, cause and attributes, in order; random ids
left out), the plans table and the outcomes must be the same on both sides (and start with ``--expect-decisions``
when given), else FAIL.

    .venv/bin/python -m bench.controller_replay [--hours 2] [--baseline-ref main] [--expect-decisions SHA]
        [--target-cpu 0.010] [--target-month-min 5] [--target-pg-cpu 0.005] [--target-trips 10]
        [--target WALL_S] [--profile FILE]

One PASS/FAIL line per target: the controller's CPU a pass (both partitions' steps: observe, decide, apply; the
whole replay process's CPU is printed beside it, split into the steps, the five-minute ranking with its forecast —
a Dagster asset in production, not the controller — and the region simulator with the tallies), a 30-day replay's
wall at this run's cost (its passes and its set-up; the cache of ``controllers.replay.disk_cache`` makes a second
run's set-up short), PostgreSQL backend CPU a pass, round trips a pass, the same decisions; wall a pass only when
``--target`` is given. Exit 0 when every line passes, 1 on a FAIL, 2 when a figure cannot be produced.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals

ROOT = Path(__file__).resolve().parents[1]
RANDOM_KEYS = ("reservation", "request", "decision")   # uuid4s the controller mints: not decisions
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")   # event ids (evidence)


def _inputs(hours: float, seed: int) -> tuple[datetime, Any, dict[str, int]]:
    """The replay's start, the repository's contracts and the claims ``sco simulate`` would size on the trace."""
    from controllers.replay import size_claims
    from controllers.replay.from_region import trace_from_region
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate import _compiled

    start = datetime(2026, 10, 1, tzinfo=UTC)
    contracts = _compiled(ROOT / "deploy" / "contracts")
    try:
        from controllers.replay import disk_cache
        from controllers.replay.from_region import cached_trace
        trace = cached_trace(RegionConfig(seed=seed), start, hours / 24, 7.0, disk_cache.cache_dir())
    except ImportError:   # a baseline tree from before the replay cache
        trace = trace_from_region(RegionConfig(seed=seed), start, hours / 24, 7.0)
    return start, contracts, {c.workload: c.units for c in size_claims(trace, contracts, 40)}


def _meters() -> Any:
    """``replay_meters`` beside this file, loaded by path (its docstring says why)."""
    spec = importlib.util.spec_from_file_location("_sco_replay_meters", Path(__file__).with_name("replay_meters.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measure(hours: float, seed: int, profile: str | None = None, strategy: str = "depth-first",
             latency_min: float = 0.0) -> dict[str, Any]:
    """One replay in this process, on whatever code ``sys.path`` gives (both trees need the replay API)."""
    from controllers.planning import Strategy
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate_controller import EmbeddedPostgres, run_controller_engine

    start, contracts, claims = _inputs(hours, seed)
    meters = _meters().Meters(bool(profile))
    pg = EmbeddedPostgres()
    try:
        url = pg.database()
        began = (time.perf_counter(), time.process_time())
        diagnostics: dict[str, int] = {}
        latency: dict[str, Any] = {"rank_latency": timedelta(minutes=latency_min)} if latency_min else {}
        with meters.installed():
            out = run_controller_engine(url, RegionConfig(seed=seed), start, hours / 24, contracts, claims,
                                        Strategy(strategy), 7.0, None, diagnostics, **latency)
        ended = (time.perf_counter(), time.process_time())
        digest = _decisions(url, out)
    finally:
        pg.close()
    if meters.prof is not None and profile:
        meters.prof.dump_stats(profile)
    passes = round(hours * 60)
    return {"passes": passes, "partitions": len({c.partition for c in contracts}),
            **meters.figures(passes, began, ended), "diagnostics": diagnostics, **digest}


def _decisions(url: str, outcomes: dict[str, Any]) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        events = []
        for (payload,) in conn.execute("SELECT payload FROM outbox ORDER BY id"):
            e = json.loads(bytes(payload))
            attrs = {k: v for k, v in (e.get("attributes") or {}).items() if k not in RANDOM_KEYS}
            events.append([e.get(k) for k in ("kind", "time", "workload", "pool", "instance", "cause")]
                          + [UUID.sub("<id>", json.dumps(attrs, sort_keys=True))])
        plans = [list(r) for r in conn.execute(
            "SELECT workload, generation, partition, plan::text, in_force FROM plans ORDER BY workload, generation")]
    figures = {w: [o.interruptions, o.wasted_s, o.shortfall_s, o.instance_s, str(o.cost)]
               for w, o in sorted(outcomes.items())}
    blob = json.dumps([events, plans, figures], sort_keys=True, default=str).encode()
    return {"events": len(events), "plans": len(plans), "decisions_sha256": hashlib.sha256(blob).hexdigest()}


def _strategies() -> list[Any]:
    from controllers.planning import Strategy

    return list(Strategy)


def _side(tree: Path, hours: float, seed: int, profile: str | None = None, strategy: str = "depth-first",
          latency_min: float = 0.0) -> dict[str, Any]:
    """Run ``_measure`` on ``tree``'s code in a child process (this file's code drives it)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-c", "import runpy, sys; sys.argv = sys.argv[1:]; "
           "runpy.run_path(sys.argv[0], run_name='__main__')", __file__, "--child", "--hours", str(hours),
           "--seed", str(seed), "--strategy", strategy, "--rank-latency-min", str(latency_min),
           *(["--profile", profile] if profile else [])]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the replay on {tree} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _export(ref: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _line(name: str, ref: str, s: dict[str, Any]) -> str:
    return (f"{name:6s} ({'ref ' + ref if name == 'before' else 'this tree'}): "
            f"{s['pass_wall_s']:.4f} s a pass wall ({s['pass_cpu_s'] * 1000:.1f} ms CPU here: "
            f"{s.get('pass_step_cpu_s', 0) * 1000:.1f} in the controllers' steps, "
            f"{s.get('pass_ranker_cpu_s', 0) * 1000:.1f} in the ranking and its forecast"
            f"{_worker(s)}, "
            f"{_rest(s) * 1000:.1f} in the region and the tallies; "
            f"{s['pass_pg_cpu_s'] * 1000:.1f} ms in PostgreSQL's backend; {s['pass_round_trips']:.1f} round trips, "
            f"{s['pass_controller_round_trips']:.1f} of them the controllers', the backend waited "
            f"{s['pass_pg_waits']:.1f} times), {s['pass_wall_s'] * 1440 / 60:.1f} min a strategy-day wall "
            f"({s['pass_cpu_s'] * 1440 / 60:.1f} CPU); set-up + warm-up {s['setup_wall_s']:.0f} s wall "
            f"({s['setup_cpu_s']:.0f} CPU); {s['events']} events, {s['plans']} plans, "
            f"decisions {s['decisions_sha256'][:12]}")


def _worker(s: dict[str, Any]) -> str:
    """The ranking worker's own CPU a pass, where the tree has one (what is left here is handing it the feeds and
    publishing its rows)."""
    if not s.get("pass_worker_cpu_s"):
        return ""
    return f" (+ {s['pass_worker_cpu_s'] * 1000:.1f} in the ranking worker's process, beside this one)"


def _rest(s: dict[str, Any]) -> float:
    """CPU seconds a pass outside the controllers' steps and the ranking: the region simulator and the tallies."""
    return float(s["pass_cpu_s"] - s.get("pass_step_cpu_s", 0) - s.get("pass_ranker_cpu_s", 0))


def _taken(s: dict[str, Any]) -> str:
    """How many of the partitions' passes the controllers took (``Controller.due``: a pass after a quiet one waits
    for a changed input or a timed rule) and their CPU each; '' for a tree that takes every pass."""
    taken = s.get("diagnostics", {}).get("controller-passes")
    if not taken:
        return ""
    every = s["passes"] * s.get("partitions", 2)
    return (f"; {taken} of {every} partition passes taken, "
            f"{s.get('pass_step_cpu_s', 0) * s['passes'] / taken * 1000:.1f} ms each")


def month_minutes(s: dict[str, Any], days: float = 30.0) -> float:
    """Minutes of wall a ``days`` replay would take at this run's cost: its passes at this pass's wall, and the
    set-up and warm-up once. A lower bound from a short run: the region fills and a month's later days cost more a
    pass (depth-first, seed 1: 11 ms a replayed minute over the first day, 18 over the month)."""
    return float(s["pass_wall_s"] * days * 1440 + s["setup_wall_s"]) / 60


def _verdicts(after: dict[str, Any], args: argparse.Namespace, same: bool, reference: str) -> list[tuple[bool, str]]:
    """(passed, line) for each target of a pass; a pass is one replay pass (both partitions' controllers). The
    controller's CPU is its steps' (both partitions'): the ranking and its forecast are a Dagster asset's work in
    production and the region is the simulator's, both printed apart; the month's wall counts everything."""
    steps = after.get("pass_step_cpu_s", after["pass_cpu_s"])
    out = [(steps <= args.target_cpu, f"controller CPU {steps * 1000:.1f} ms a pass, both partitions' steps "
            f"(target ≤ {args.target_cpu * 1000:g} ms; the whole replay process: "
            f"{after['pass_cpu_s'] * 1000:.1f} ms){_taken(after)}"),
           (month_minutes(after) <= args.target_month_min, f"a 30-day replay at this cost ≥ "
            f"{month_minutes(after):.0f} min of wall, one process (target ≤ {args.target_month_min:g} min; a lower "
            "bound: a month's later days cost more a pass than its first — time the month itself, "
            "bench.replay_compare --days 30)"),
           (after["pass_pg_cpu_s"] <= args.target_pg_cpu, f"PostgreSQL backend CPU "
            f"{after['pass_pg_cpu_s'] * 1000:.1f} ms a pass (target ≤ {args.target_pg_cpu * 1000:g} ms)"),
           (after["pass_round_trips"] <= args.target_trips, f"{after['pass_round_trips']:.1f} round trips a pass "
            f"(target ≤ {args.target_trips:g})"),
           (same, f"decisions {after['decisions_sha256'][:12]} {'the same as' if same else 'DIFFER from'} "
            f"{reference}")]
    if args.target is not None:
        out.append((after["pass_wall_s"] <= args.target, f"{after['pass_wall_s']:.4f} s a pass wall "
                    f"(target ≤ {args.target:g} s)"))
    return out


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    p = argparse.ArgumentParser(prog="bench.controller_replay")
    p.add_argument("--hours", type=float, default=2.0, help="virtual hours replayed (a pass a minute)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategy", default="depth-first", choices=[s.value for s in _strategies()],
                   help="the planner's strategy (expected-cost reads the forecast, so its hash covers it too)")
    p.add_argument("--baseline-ref", default="main", help="the git ref measured as 'before' ('' to skip)")
    p.add_argument("--expect-decisions", default="",
                   help="the decisions hash (a prefix will do) the tree must give, e.g. a baseline's from an earlier "
                        "run (checked as well as the baseline's of this run)")
    p.add_argument("--target-cpu", type=float, default=0.010, help="controller CPU seconds a pass, after")
    p.add_argument("--target-month-min", type=float, default=5.0,
                   help="minutes of wall for 30 days at this run's pass and set-up cost")
    p.add_argument("--target-pg-cpu", type=float, default=0.005, help="PostgreSQL backend CPU seconds a pass, after")
    p.add_argument("--target-trips", type=float, default=10, help="round trips to PostgreSQL a pass, after")
    p.add_argument("--target", type=float, default=None, help="seconds of wall a pass, after (none by default: the "
                                                              "machine may be shared)")
    p.add_argument("--profile", default="", help="write cProfile stats of this tree's controller passes here")
    p.add_argument("--rank-latency-min", type=float, default=0.0,
                   help="minutes from a ranking's inputs to its being in force (0: at once, as the docs' hashes; "
                        "more: a worker process ranks meanwhile), both sides")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:   # a SIGTERM ends it through ``finally``: the embedded PostgreSQL is stopped
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        print(json.dumps(_measure(args.hours, args.seed, args.profile or None, args.strategy,
                                  args.rank_latency_min)))
        return 0
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{args.hours:g} h replayed at full scale (seed {args.seed}, {args.strategy})")
    try:
        sides = {"after": _side(ROOT, args.hours, args.seed, args.profile or None, args.strategy,
                                args.rank_latency_min)}
        if args.baseline_ref:
            with tempfile.TemporaryDirectory(prefix="sco-bench-base-") as d:
                _export(args.baseline_ref, Path(d))
                sides["before"] = _side(Path(d), args.hours, args.seed, strategy=args.strategy,
                                        latency_min=args.rank_latency_min)
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as exc:
        print(f"no figure: {exc}", file=sys.stderr)
        return 2
    for name in ("before", "after"):
        if (s := sides.get(name)) is not None:
            print(_line(name, args.baseline_ref, s))
    after, before = sides["after"], sides.get("before")
    digest = after["decisions_sha256"]
    same = (before is None or before["decisions_sha256"] == digest) and digest.startswith(args.expect_decisions)
    if before is not None:
        print(f"ratio before/after: {before['pass_wall_s'] / after['pass_wall_s']:.1f}× wall, "
              f"{before['pass_cpu_s'] / after['pass_cpu_s']:.1f}× CPU, "
              f"{before['pass_pg_cpu_s'] / max(after['pass_pg_cpu_s'], 1e-9):.1f}× PostgreSQL CPU, "
              f"{before['pass_round_trips'] / max(after['pass_round_trips'], 1e-9):.1f}× round trips")
    reference = " and ".join(x for x in (f"ref {args.baseline_ref}'s" if before is not None else "",
                                         f"the expected {args.expect_decisions}" if args.expect_decisions else "")
                             if x) or "(nothing to compare with)"
    verdicts = _verdicts(after, args, same, reference)
    for ok, line in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {line}")
    return 0 if all(ok for ok, _ in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
