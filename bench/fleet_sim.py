"""The fleet-scale simulation: a region of N reclaimable instances of ours in P partitions, ONE
PRODUCTION CONTROLLER PROCESS PER PARTITION (``controllers/replay/fleet.py``: the replay's controller against the
simulated region over its provider API), the region's token budget split statically between them (ADR-12's 10
mutating calls a second, a bucket per partition), the fleet built first, then steady arrivals, then one hall-wide
reclaim (every reclaimable instance in hall h1
noticed at once, 120 s), the region's notices published to a 3-member NATS JetStream cluster (as
``sco up --nats-cluster 3`` runs it) with real subscriber connections on a sample of the noticed instances'
subjects (an agent's: one connection, one subject). Run at each size (default 2,000 then 20,000: the smaller
is the same run's baseline), it prints each figure per size with its growth ratio and PASS/FAIL for
placement p99 <= 10 s (the steady arrivals) and floor restored <= 15 min after the hall reclaim (at the
largest size); the build's duration, the calls a second used and the replacement latency are figures, not targets.

    .venv/bin/python -m bench.fleet_sim [--instances 2000,20000] [--partitions 10] [--subscribers 300]
                                        [--growth 0.1] [--steady 1200] [--progress]

Virtual time: see ``CLOCK_RULE`` (printed). Wall and CPU figures beside. Exits non-zero when a figure cannot be
produced (no floor in the hall, no notice delivered, a controller process failing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench._cli import stop_on_signals
from bench.agent_notice_latency import pct as _fraction
from contracts.subjects import notice_subject
from controllers.replay.fleet import CLOCK_RULE, FleetFigures, FleetPlan, FleetSim
from controllers.replay.fleet_scenario import steady_arithmetic

PLACEMENT_P99_S = 10.0
FLOOR_S = 15 * 60.0
REGION = "r1"


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100)."""
    return _fraction(values, p / 100)


def _subscriber(urls: list[str], subjects: list[str], pipe: Any) -> None:
    """One process: a connection per subject, spread over the members; arrival wall times back by pipe."""
    asyncio.run(_subscribe(urls, subjects, pipe))


async def _subscribe(urls: list[str], subjects: list[str], pipe: Any) -> None:
    from stores.nats import connect

    arrivals: dict[str, float] = {}
    done = asyncio.Event()

    async def on_msg(msg: Any) -> None:
        arrivals.setdefault(msg.subject, time.time())
        if len(arrivals) == len(subjects):
            done.set()

    clients = []
    for k, subject in enumerate(subjects):
        nc = await connect(urls[k % len(urls)], name=f"fleet-agent-{k}")
        await nc.subscribe(subject, cb=on_msg)
        clients.append(nc)
    for nc in clients:
        await nc.flush()
    pipe.send("ready")
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), timeout=float(pipe.recv()))   # the coordinator says how long
    pipe.send(arrivals)
    for nc in clients:
        await nc.close()


@dataclass
class Fanout:
    """Subscriber processes on a sample of the hall's notice subjects; the publish's wall-clock bounds."""

    urls: list[str]
    subscribers: int
    procs: int = 3
    subjects: list[str] = field(default_factory=list)
    workers: list[tuple[Any, Any]] = field(default_factory=list)
    sent: tuple[float, float] = (0.0, 0.0)

    def before_reclaim(self, ours: list[str]) -> None:
        sample = random.Random(18).sample(ours, min(self.subscribers, len(ours)))
        self.subjects = [notice_subject(REGION, i) for i in sample]
        ctx = multiprocessing.get_context("spawn")
        for n in range(self.procs):
            here, there = ctx.Pipe()
            mine = self.subjects[n::self.procs]
            proc = ctx.Process(target=_subscriber, args=(self.urls, mine, there), daemon=True)
            proc.start()
            self.workers.append((proc, here))
        for _, pipe in self.workers:
            if pipe.recv() != "ready":
                raise RuntimeError("a notice subscriber process did not get ready")
            pipe.send(60.0)

    def published(self, first: float, last: float) -> None:
        self.sent = (first, last)

    def delivery(self, noticed: set[str]) -> tuple[list[float], int]:
        """Delivery latencies (arrival - the burst's first publish) and how many sampled subjects had a notice."""
        arrivals: dict[str, float] = {}
        for proc, pipe in self.workers:
            arrivals.update(pipe.recv())
            proc.join(timeout=10)
        expected = {notice_subject(REGION, i) for i in noticed} & set(self.subjects)
        return [arrivals[s] - self.sent[0] for s in expected if s in arrivals], len(expected)


@dataclass
class Size:
    f: FleetFigures
    delivery: list[float]
    expected: int
    publish_s: float
    plan: FleetPlan


def run_size(n: int, args: argparse.Namespace, pg: Any, nats_url: str, urls: list[str]) -> Size:
    import psycopg

    from sco.commands.simulate_controller import production_ranker

    url = pg.database()
    fan = Fanout(urls, args.subscribers)
    plan = FleetPlan(instances=n, partitions=args.partitions, fill_s=args.fill, build_max_s=args.build_max,
                     growth_per_h=args.growth, steady_s=args.steady, after_s=args.after)
    print(f"[{n:,}] {steady_arithmetic(plan)}", flush=True)
    with psycopg.connect(url, autocommit=True) as rank_conn:
        sim = FleetSim(plan, url, nats_url=nats_url, ranker=production_ranker(rank_conn, REGION),
                       progress=(lambda s: print("  progress:", s, flush=True)) if args.progress else None,
                       before_reclaim=fan.before_reclaim, published=fan.published)
        f = sim.figures()
    delivery, expected = fan.delivery(sim.noticed)
    return Size(f, delivery, expected, fan.sent[1] - fan.sent[0], plan)


def _rate(calls: int, seconds: float) -> str:
    return f"{calls / seconds:.2f} calls/s" if seconds > 0 else "n/a"


def _fmt(v: float | None, unit: str = " s") -> str:
    return "n/a" if v is None else f"{v:,.2f}{unit}"


def report(n: int, s: Size) -> dict[str, float | None]:
    f = s.f
    row: dict[str, float | None] = {
        "placement p50 (s)": pct(f.placement_s, 50) if f.placement_s else None,
        "placement p99 (s)": pct(f.placement_s, 99) if f.placement_s else None,
        "steady placement p50 (s)": pct(f.steady_s, 50) if f.steady_s else None,
        "steady placement p99 (s)": pct(f.steady_s, 99) if f.steady_s else None,
        "replacement p50 (s)": pct(f.replacement_s, 50) if f.replacement_s else None,
        "replacement p99 (s)": pct(f.replacement_s, 99) if f.replacement_s else None,
        "floor restored (s)": f.floor_restored_s,
        "pass wall p50 (s)": pct(f.pass_wall_s, 50), "pass wall p99 (s)": pct(f.pass_wall_s, 99),
        "pass CPU p50 (s)": pct(f.pass_cpu_s, 50), "pass CPU p99 (s)": pct(f.pass_cpu_s, 99),
        "notice delivery p99 (s)": pct(s.delivery, 99) if s.delivery else None,
        "notices published": float(f.notices_published),
        "token budget spent": float(f.budget_spent), "token budget refused": float(f.budget_refused),
        "build (s)": f.build_s, "build calls/s": f.build_calls / f.build_s if f.build_s else None,
        "steady calls/s": f.steady_calls / (f.reclaim_s - f.build_s) if f.reclaim_s > f.build_s else None,
        "instances built": float(f.built), "instances of ours": float(f.instances), "workloads": float(f.workloads),
        "rounds": float(f.rounds), "bench wall (s)": f.wall_s, "coordinator CPU (s)": f.cpu_s,
    }
    rate = s.plan.budget_rate
    print(f"== {n:,} instances targeted, {f.partitions} partitions (one controller process each): {f.workloads} "
          f"workloads, {f.instances:,} reclaimable instances of ours at the reclaim ({f.instances / n:.1%} of the "
          f"target)")
    print(f"  build: {'every build claim placed' if f.build_placed else f'{f.build_waiting:,} units NOT placed'} after "
          f"{f.build_s:,.0f} virtual s, {f.built:,} instances ({f.built / n:.1%}); {f.build_calls:,} calls admitted "
          f"= {_rate(f.build_calls, f.build_s)} of the region's {rate:.0f}/s")
    steady = f.reclaim_s - f.build_s
    print(f"  steady arrivals: {f.steady_claims} claims over {steady:,.0f} s; {f.steady_calls:,} calls admitted = "
          f"{_rate(f.steady_calls, steady)}; after the reclaim {f.after_calls:,} calls = "
          f"{_rate(f.after_calls, f.virtual_s - f.reclaim_s)}; whole run {_rate(f.budget_spent, f.virtual_s)}")
    print(f"  placement (claim visible -> launched, virtual), every claim incl. the fleet's build: p50 "
          f"{_fmt(row['placement p50 (s)'])}, p99 {_fmt(row['placement p99 (s)'])} over {len(f.placement_s):,} "
          f"units ({f.unplaced_units} never placed)")
    print(f"  placement of the steady arrivals after the build: p50 {_fmt(row['steady placement p50 (s)'])}, p99 "
          f"{_fmt(row['steady placement p99 (s)'])} over {len(f.steady_s):,} units")
    print(f"  pass wall per controller: p50 {_fmt(row['pass wall p50 (s)'])}, p99 {_fmt(row['pass wall p99 (s)'])}, "
          f"max {_fmt(max(f.pass_wall_s))}; pass CPU p50 {_fmt(row['pass CPU p50 (s)'])}, p99 "
          f"{_fmt(row['pass CPU p99 (s)'])}; {f.rounds} rounds over {f.virtual_s:,.0f} virtual s "
          f"({f.skipped_s:,.0f} s of them idle passes skipped)")
    print(f"  hall reclaim: {f.hall_reclaimed:,} of ours noticed; replacement (notice -> launched): p50 "
          f"{_fmt(row['replacement p50 (s)'])}, p99 {_fmt(row['replacement p99 (s)'])} over "
          f"{len(f.replacement_s):,} units ({f.unreplaced_units} never replaced)")
    print(f"  floor: {f.floor_workloads} workloads had floor in the hall, {f.floor_restored} back in full; restored "
          f"{_fmt(f.floor_restored_s)} after the reclaim (the controllers' own floor-restored reports: "
          f"{f.floor_reported}, last {_fmt(f.floor_reported_s)})")
    print(f"  notice fan-out: {f.notices_published:,} notices published by the region's relay to the 3-member "
          f"cluster in {s.publish_s:.2f} s wall; {len(s.delivery)}/{s.expected} sampled subscribers (one "
          f"connection each) got theirs; delivery from the burst's first publish p50 "
          f"{_fmt(pct(s.delivery, 50) if s.delivery else None)}, p99 {_fmt(row['notice delivery p99 (s)'])}")
    print(f"  token budget (a bucket per partition): {f.budget_spent:,} calls admitted, {f.budget_refused:,} refused "
          f"(per process: {f.spent_by_process}); controllers' events: {dict(sorted(f.events.items()))}")
    for kind, cause, count in f.causes:
        print(f"  {kind} ×{count:,}: {cause}")
    for line in f.late:
        print(f"  late steady claim: {line}")
    print(f"  wall {f.wall_s:.0f} s, coordinator CPU {f.cpu_s:.0f} s (region, its API, feeds)", flush=True)
    return row


def growth(sizes: list[int], rows: list[dict[str, float | None]]) -> None:
    print("what grows with the fleet and what does not (ratio: largest / smallest size):")
    print(f"  {'figure':28s}" + "".join(f"{n:>14,}" for n in sizes) + f"{'ratio':>9s}")
    for key in rows[0]:
        vals = [r[key] for r in rows]
        a, b = vals[0], vals[-1]
        ratio = f"{b / a:8.2f}x" if a and b is not None else "      n/a"
        print(f"  {key:28s}" + "".join(f"{_fmt(v, ''):>14s}" for v in vals) + ratio)


def verdicts(n: int, s: Size) -> list[str]:
    """PASS/FAIL lines; the problems that mean no figure (exit non-zero)."""
    f, problems = s.f, []
    p99 = pct(f.steady_s, 99) if f.steady_s else None
    every = pct(f.placement_s, 99) if f.placement_s else None
    if p99 is None:
        problems.append("no steady placement latency")
    if f.floor_workloads == 0:
        problems.append("no workload had floor instances in the reclaimed hall")
    if not s.delivery:
        problems.append("no notice delivered to a subscriber")
    ok = p99 is not None and p99 <= PLACEMENT_P99_S
    print(f"{'PASS' if ok else 'FAIL'} placement p99 {_fmt(p99)} <= {PLACEMENT_P99_S:.0f} s at {n:,} instances "
          f"(steady arrivals; every claim incl. the cold build of the whole fleet: p99 {_fmt(every)}, no target)")
    print(f"fleet at the reclaim: {f.instances:,} reclaimable instances of ours = {f.instances / n:.1%} of the "
          f"{n:,} targeted (built in {f.build_s:,.0f} virtual s at {_rate(f.build_calls, f.build_s)}; no target)")
    fr = f.floor_restored_s
    ok = fr is not None and fr <= FLOOR_S
    print(f"{'PASS' if ok else 'FAIL'} floor restored {_fmt(fr)} <= {FLOOR_S:.0f} s (15 min) after the hall "
          f"reclaim at {n:,} instances ({f.floor_restored}/{f.floor_workloads} workloads)")
    return problems


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    ap = argparse.ArgumentParser(prog="python -m bench.fleet_sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", default="2000,20000", help="comma-separated sizes; the first is the baseline")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--subscribers", type=int, default=300, help="real subscriber connections, one subject each")
    ap.add_argument("--progress", action="store_true", help="a progress line every 20 rounds")
    ap.add_argument("--fill", type=float, default=FleetPlan.fill_s,
                    help="the build's claims arrive in [30 s, FILL] (virtual)")
    ap.add_argument("--build-max", type=float, default=FleetPlan.build_max_s,
                    help="the build lasts until every build claim is placed, at most this (virtual s)")
    ap.add_argument("--growth", type=float, default=FleetPlan.growth_per_h,
                    help="steady arrivals: the fleet's units grow by this share an hour")
    ap.add_argument("--steady", type=float, default=FleetPlan.steady_s,
                    help="steady arrivals for this long after the build, then the hall reclaim (virtual s)")
    ap.add_argument("--after", type=float, default=FleetPlan.after_s,
                    help="at most this long after the reclaim (virtual s; the run stops once all is back)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.instances.split(",") if x.strip()]
    from sco.commands.simulate_controller import EmbeddedPostgres
    from testkit.nats import NatsCluster

    print("fleet-scale simulation: production controllers, one process per partition; token budget "
          "split statically between them (ADR-12); the fleet's build, steady arrivals, one hall-wide reclaim; "
          "notices through a 3-member NATS cluster")
    print(f"rule: {CLOCK_RULE}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}; cores: {os.cpu_count()}", flush=True)
    pg, cluster = EmbeddedPostgres(), NatsCluster(3).start()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        urls = cluster.url.split(",")
        results, rows = [], []
        for n in sizes:   # each size's figures as soon as they are there
            results.append((n, run_size(n, args, pg, cluster.url, urls)))
            rows.append(report(*results[-1]))
    finally:
        cluster.close()
        pg.close()
    if len(rows) > 1:
        growth(sizes, rows)
    print(f"subscribers: {args.subscribers} real connections sampling the noticed subjects (not one per instance: "
          f"{max(sizes):,} connections do not fit this 2-core box beside the controllers)")
    problems = verdicts(*results[-1])
    print(f"bench: wall {time.perf_counter() - wall:.0f} s, this process's CPU {time.process_time() - cpu:.0f} s; "
          f"load average at end {os.getloadavg()[0]:.2f}")
    for p in problems:
        print(f"ERROR: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
