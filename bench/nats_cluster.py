"""NATS as a JetStream cluster of three with one member SIGKILLed, against one server in the same run.

    .venv/bin/python -m bench.nats_cluster [--events 100000] [--nodes 1000] [--seed 18] [--down 10]

Events: the event spine of ``bench/event_soak.py`` (publishers with ``Nats-Msg-Id``, each resent until the
stream acknowledges it → ``sco ingest`` → the ClickHouse front end, poisons mixed in), first on one nats-server
without faults (the baseline), then on a cluster of three without faults (what the 3 replicas cost), then on a
cluster of three whose member leading
``SCO_EVENTS`` (``$JS.API.STREAM.INFO``) is SIGKILLed once 10 % of the events are stored, while the publishers
are mid-way, and started again ``--down`` seconds later. Reconciled: every event exactly once in ClickHouse
(``count()`` FINAL = distinct = published), every poison dead-lettered, the restarted member current again.

Notices: ``--nodes`` full agents in this process, each logged in as its own instance's user with every member's
URL (``testkit/noticekill.py``); one provider notice per node from the region's relay user, in one burst.
Baseline: one nats-server, no fault. Then the cluster with the member holding the most agents SIGKILLed after
a quarter of the burst, the relay on another member, then the relay on that member. The relay publishes every
notice again every 0.5 s until every node has it (core NATS keeps nothing for a reconnecting subscriber).
Prints p50/p99 publish → intake and → first action for each, the cluster's against the baseline's.

Exits non-zero when an event is lost or duplicated, a poison is unaccounted for, a node never got its notice,
or a figure is missing.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench._cli import stop_on_signals
from testkit.eventsoak import KillPlan, SoakResult, plan_soak
from testkit.nats import NatsCluster, NatsProcess
from testkit.noticekill import NoticeRun, notice_users, run_notices
from testkit.soakrun import run_soak


def events(n: int, seed: int, down_s: float, root: Path) -> list[str]:
    """The two event runs; returns the problems found (none: all exact)."""
    base_plan = plan_soak(n, 0, seed, poison_every=max(1, n // 20))
    kill_plan = replace(base_plan, kills=(KillPlan(n // 10, "nats", down_s),))
    results: dict[str, SoakResult] = {}
    for label, plan, size in (("one nats-server, no fault (baseline)", base_plan, 1),
                              ("cluster of 3, no fault", base_plan, 3),
                              ("cluster of 3, SCO_EVENTS leader SIGKILLed", kill_plan, 3)):
        print(f"-- events: {label}, load {os.getloadavg()[0]:.1f}", flush=True)
        result = run_soak(plan, root / f"events-{len(results)}", ack_wait_s=5.0, drain_timeout_s=300,
                          nats_cluster=size)
        print("\n".join(result.lines()), flush=True)
        results[label] = result
    base, quiet, cluster = results.values()
    problems = [f"{label}: lost {r.lost}, duplicated {r.duplicated}, foreign {r.foreign}, drained {r.drained}, "
                f"dead letters {r.dead_letter_problems[:3]}" for label, r in results.items() if not r.ok]
    if cluster.replicas_current is not True:
        problems.append("the killed leader did not catch up with SCO_EVENTS after its restart")
    if not cluster.kills or cluster.kills[0].at >= n:
        problems.append("the leader was not killed while events were still being published")
    if base.events_per_s and cluster.events_per_s:
        print(f"events end to end: one server {base.events_per_s:,.0f}/s; cluster of 3 {quiet.events_per_s:,.0f}/s "
              f"({quiet.events_per_s / base.events_per_s:.2f}x), with the leader killed {cluster.events_per_s:,.0f}/s "
              f"({cluster.events_per_s / base.events_per_s:.2f}x); "
              f"killed at {cluster.kills[0].at:,} published, stored again after "
              f"{cluster.kills[0].recovered_s or float('nan'):.1f} s", flush=True)
    return problems


def notices(nodes: int, root: Path) -> list[str]:
    """The three notice runs; returns the problems found."""
    instances = [f"i-{n:05d}" for n in range(nodes)]
    password = secrets.token_urlsafe(18)
    runs: dict[str, NoticeRun] = {}
    for label, size, kill in (("one nats-server, no fault (baseline)", 1, None),
                              ("cluster of 3, busiest member killed, relay on another", 3, "other"),
                              ("cluster of 3, busiest member killed, relay on it", 3, "relay")):
        users = notice_users(instances, password)
        server: NatsCluster | NatsProcess = (NatsProcess(root / f"n-{kill}", users=users) if size == 1
                                             else NatsCluster(size, root / f"n-{kill}", users=users))
        server.start()
        try:
            run = run_notices(server, instances, root / f"agents-{kill}", password, kill=kill, deadline_s=120)
        finally:
            server.close()
        print("\n".join(run.lines(f"notices: {label}, load {os.getloadavg()[0]:.1f}")), flush=True)
        runs[label] = run
    base = next(iter(runs.values()))
    problems = [f"{label}: {len(r.intake)} of {nodes} took the notice in, {len(r.acted)} acted"
                for label, r in runs.items() if len(r.intake) < nodes or len(r.acted) < nodes]
    for label, run in list(runs.items())[1:]:
        if base.intake and run.intake:
            print(f"{label}: publish -> intake p99 {run.p99_ms():.0f} ms ({run.p99_ms() / base.p99_ms():.1f}x the "
                  f"baseline's {base.p99_ms():.0f} ms); first action p99 {run.p99_ms('acted'):.0f} ms")
    return problems


def main() -> None:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    logging.getLogger("nats").setLevel(logging.CRITICAL)  # the reconnects after a kill are the point here
    logging.getLogger("sco.agent.drain").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--down", type=float, default=10.0, help="seconds the killed leader stays down")
    parser.add_argument("--only", choices=("events", "notices"), default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sco-bench-natscluster-"))
    started = time.monotonic()
    problems: list[str] = []
    try:
        if args.only in (None, "events"):
            problems += events(args.events, args.seed, args.down, root)
        if args.only in (None, "notices"):
            problems += notices(args.nodes, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"bench.nats_cluster done in {time.monotonic() - started:.0f} s")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        sys.exit(1)
    ran = {"events": "nothing lost or duplicated", "notices": "every notice taken in"}
    print("PASS: " + ", ".join(v for k, v in ran.items() if args.only in (None, k)))


if __name__ == "__main__":
    main()
