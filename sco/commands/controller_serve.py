"""``sco controller run``'s loop once the controller is built: a pass each interval (or when NATS wakes it), after
each pass the agent bundle the next launches carry and the controller's own bundle refreshed from the
distributor, and the lease handed over on an orderly stop."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["serve"]


async def serve(args: argparse.Namespace, ctl: Any, conn: Any, holder: str, feed: Any,
                refresh: Callable[[], Any] | None) -> None:
    """Run passes until SIGTERM/SIGINT or ``--passes``; release the partition's lease at the end."""
    from controllers.controller.lease import release
    from controllers.controller.loop import PassReport
    from controllers.controller.replacement import run
    from stores import nats as sco_nats

    stop = asyncio.Event()
    count = 0

    async def on_pass(report: PassReport) -> None:
        nonlocal count
        count += 1
        print(f"pass {count}: leader={report.leader} read_only={report.read_only} "
              f"generation={report.generation} launched={report.launched} terminated={report.terminated} "
              f"held={report.held}", flush=True)
        if feed is not None:  # the agent bundle the next launches carry, fresh from the distributor
            newer = await asyncio.to_thread(feed.poll)
            if newer is not None:
                ctl.actuator.agent_bundle = newer
                print(f"agent bundle refreshed from {feed.url}", flush=True)
        if refresh is not None:  # the controller's own contracts: the next pass plans with a taken bundle
            await asyncio.to_thread(refresh)
        if args.passes and count >= args.passes:
            stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # an orderly stop hands the lease over at once
        loop.add_signal_handler(sig, stop.set)
    nc = await sco_nats.connect(None if args.nats == "stack" else args.nats, name=f"sco-controller-{holder}",
                                component="controller") if args.nats else None
    try:
        await run(ctl, nc, interval_s=args.interval, stop=stop, on_pass=on_pass)
    finally:
        if nc is not None:
            await nc.close()
        release(conn, args.region, args.partition, holder)
        print(f"stopped; released the lease of {args.partition}", flush=True)
