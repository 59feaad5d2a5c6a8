"""``sco drill``: reclaim a small share of a partition through the provider's reclaim path with the drill
flag (ADR-33), or a whole hall on a game day, and report whether every drained node met its budget.

Events are read back from JetStream (the agents' drained/overrun events, flagged ``drill``), so the report
is what the nodes did, not what the drill intended. Exit 0 when every reclaimed node drained within its
budget, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
from typing import Any

from ..errors import CliError
from .report import render_table

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add ``sco drill`` to the parser."""
    p = sub.add_parser("drill", help="reclaim a share of a partition (or a hall) with the drill flag; judge drains")
    p.add_argument("--partition", required=True, help="<region>/<cluster>, e.g. r1/slurm-hpc")
    p.add_argument("--fraction", type=float, default=0.01, help="share of the partition's instances (≤ 0.05)")
    p.add_argument("--game-day", action="store_true", help="reclaim every instance of --hall instead")
    p.add_argument("--hall", help="the hall for --game-day")
    p.add_argument("--provider", default=os.environ.get("SCO_PROVIDER_URL", "http://127.0.0.1:8799"),
                   help="the provider API (simulated region URL; default SCO_PROVIDER_URL)")
    p.add_argument("--nats", default=None, help="NATS URL (default SCO_NATS_URL or the stack)")
    p.add_argument("--wait", type=float, default=None,
                   help="at most this many seconds to collect drain events (default 150: the notice and a margin)")
    p.add_argument("--seed", type=int, default=None, help="victim choice seed (default: time)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=_drill)


def _drill(args: argparse.Namespace) -> int:
    if args.game_day and not args.hall:
        raise CliError("--game-day reclaims a hall: name it with --hall (e.g. --hall h2)")
    if "/" not in args.partition:
        raise CliError(f"--partition must be <region>/<cluster>, got {args.partition!r}")
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from contracts.provider import InstanceStatus, ProviderError
    from contracts.subjects import EVENT_SUBJECT_PREFIX
    from controllers.drills import DrillError, choose_victims, judge
    from controllers.providers import SimulatedProvider
    from stores import nats as nats_store

    region = args.partition.split("/", 1)[0]
    provider = SimulatedProvider(args.provider, region=region, identity="drill")
    try:
        instances = provider.list_instances({"partition": args.partition})
        if args.game_day:
            victims = tuple(i.instance_id for i in instances
                            if i.hall == args.hall and i.status is InstanceStatus.ACTIVE)
            if not victims:
                raise CliError(f"no active instances of {args.partition} in hall {args.hall}")
        else:
            victims = choose_victims(instances, args.partition, args.fraction,
                                     args.seed if args.seed is not None else time.time_ns())
    except DrillError as exc:
        raise CliError(str(exc)) from None
    except ProviderError as exc:
        raise CliError(f"provider at {args.provider}: {exc}") from None
    nc = await nats_store.connect(args.nats, name="sco-drill", component="watcher")
    events: list[dict[str, Any]] = []

    async def collect(msg: Any) -> None:
        with contextlib.suppress(ValueError):
            events.append(json.loads(msg.data))

    # a core subscription: only the events from now on, and the watcher's credential may create no consumer
    sub = await nc.subscribe(f"{EVENT_SUBJECT_PREFIX}.{region}.>", cb=collect)
    await nc.flush(timeout=5)
    try:
        provider.reclaim(victims, drill=True)
        wait = args.wait if args.wait is not None else 150.0  # the 120 s notice and a margin
        print(f"drill: {len(victims)} instance(s) of {args.partition} reclaimed with the drill flag; "
              f"collecting drain events for {wait:.0f} s", flush=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            report = judge(victims, events)
            if report.count("not-drained") == 0:
                break
            await asyncio.sleep(1.0)
    finally:
        await sub.unsubscribe()
        await nc.close()
    report = judge(victims, events)
    if args.format == "json":
        print(json.dumps({"passed": report.passed, "verdicts": [v.__dict__ for v in report.verdicts]}, indent=2))
    else:
        rows = [[v.instance[:18], v.verdict, "-" if v.drain_ms is None else f"{v.drain_ms / 1000:.1f} s",
                 "-" if v.budget_s is None else f"{v.budget_s} s", v.path or "-", ",".join(v.workloads) or "-"]
                for v in report.verdicts]
        print(render_table(["instance", "verdict", "drain", "budget", "path", "workloads"], rows))
        print(f"{report.count('met')} met the budget, {report.count('overrun')} overran, "
              f"{report.count('not-drained')} never drained: {'PASS' if report.passed else 'FAIL'}")
    return 0 if report.passed else 1
