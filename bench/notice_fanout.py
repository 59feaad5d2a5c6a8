"""NATS notice fan-out: one notice to each of 5,000 per-instance subjects in one burst (a correlated reclaim
of 5,000 nodes), each subject with its own subscriber, on a real nats-server authenticated as ``sco up``
runs it (the region's relay user publishes; the subscribers connect as a bench user that may only subscribe
to ``sco.notice.r1.>``). Subscribers are spread over ``--procs`` processes × ``--conns`` connections each
(an agent has one connection; 5,000 sockets in one Python process would measure Python, not NATS). Each
notice carries its publish time (same host clock); delivery latency = arrival − publish. Baseline in the
same run: the same burst to ONE wildcard subscriber (``sco.notice.r1.*``). Seed target: 5,000 subscribers
≤ 1 s p99.

    .venv/bin/python -m bench.notice_fanout [--instances 5000 --procs 4 --conns 250]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals
from bench.agent_notice_latency import pct
from bench.nats_auth import BenchNats
from contracts.subjects import notice_subject
from sco.stack.credentials import NatsUser

REGION = "r1"


def instance(i: int) -> str:
    return f"i-{i:05d}"


async def worker(url: str, first: int, count: int, conns: int, wildcard: bool) -> None:
    import nats

    arrivals: list[float] = []
    done = asyncio.Event()

    async def cb(msg: Any) -> None:
        arrivals.append(time.time() - json.loads(msg.data)["sent"])
        if len(arrivals) >= count:
            done.set()

    clients = [await nats.connect(url, pending_size=16 * 1024 * 1024) for _ in range(conns)]
    if wildcard:
        await clients[0].subscribe(f"sco.notice.{REGION}.*", cb=cb)
    else:
        for k in range(count):
            await clients[k % conns].subscribe(notice_subject(REGION, instance(first + k)), cb=cb)
    for c in clients:
        await c.flush()
    print("ready", flush=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 60)
    print(json.dumps(arrivals), flush=True)
    for c in clients:
        await c.close()


async def publish(url: str, total: int) -> None:
    import nats

    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    for i in range(total):
        body = json.dumps({"region": REGION, "instance_id": instance(i), "issued_at": "2026-11-29T21:00:00Z",
                           "cause": "reclaim", "sent": time.time()}).encode()
        await nc.publish(notice_subject(REGION, instance(i)), body)
    await nc.flush()
    await nc.close()


def run(url: str, relay_url: str, total: int, procs: int, conns: int, wildcard: bool) -> tuple[list[float], float]:
    per = total // procs
    workers = []
    for p in range(procs):
        count = per if p < procs - 1 else total - per * (procs - 1)
        args = [sys.executable, "-m", "bench.notice_fanout", "--worker", url, str(p * per), str(count), str(conns)]
        if wildcard:
            args = [sys.executable, "-m", "bench.notice_fanout", "--worker", url, "0", str(total), "1", "wildcard"]
        workers.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
        if wildcard:
            break
    for w in workers:
        assert w.stdout is not None and w.stdout.readline().strip() == "ready"
    start = time.monotonic()
    asyncio.run(publish(relay_url, total))
    publish_s = time.monotonic() - start
    latencies: list[float] = []
    for w in workers:
        assert w.stdout is not None
        latencies.extend(json.loads(w.stdout.readline()))
        w.wait(30)
    return latencies, publish_s


TARGET_P99_MS = 1000.0  # the seed target: every subscriber has its notice within a second


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(prog="python -m bench.notice_fanout", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)  # a subscriber process the bench starts
    parser.add_argument("--instances", type=int, default=5000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--conns", type=int, default=250, help="connections per subscriber process")
    args = parser.parse_args()
    if args.worker:
        url, first, count, conns, *rest = args.worker
        asyncio.run(worker(url, int(first), int(count), int(conns), bool(rest)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        # authenticated as `sco up` runs it: the region's relay publishes; the subscribers are one bench user
        # that may only subscribe to the region's notices (5,000 minted agent users would need 5,000 connections)
        subscriber = NatsUser("fanout", secrets.token_urlsafe(18), (), (f"sco.notice.{REGION}.>",))
        server = BenchNats(Path(tmp) / "nats", REGION, extra=[subscriber])
        try:
            sub_url = server.url_for("fanout")
            base, _base_pub = run(sub_url, server.relay_url, args.instances, 1, 1, wildcard=True)
            lat, pub_s = run(sub_url, server.relay_url, args.instances, args.procs, args.conns, wildcard=False)
        finally:
            server.stop()
    ms = 1000.0
    print(f"{args.instances} notices, one per instance subject, published in one burst "
          f"({pub_s * ms:.0f} ms to publish)")
    print(f"baseline: one wildcard subscriber    p50 {statistics.median(base) * ms:7.1f} ms   "
          f"p99 {pct(base, 0.99) * ms:7.1f} ms   max {max(base) * ms:7.1f} ms   ({len(base)} delivered)")
    print(f"{args.instances} per-instance subscribers over {args.procs} processes x {args.conns} connections: "
          f"p50 {statistics.median(lat) * ms:.1f} ms   p99 {pct(lat, 0.99) * ms:.1f} ms   "
          f"max {max(lat) * ms:.1f} ms   ({len(lat)} delivered)")
    met = pct(lat, 0.99) * ms <= TARGET_P99_MS
    print(f"ratio p99 fan-out/baseline: {pct(lat, 0.99) / pct(base, 0.99):.2f}x   seed target p99 <= "
          f"{TARGET_P99_MS:g} ms: {'PASS' if met else 'FAIL'}")
    if len(lat) < args.instances or len(base) < args.instances:
        # a percentile over the notices that arrived is not the figure: some subscribers never heard theirs
        raise SystemExit(f"notice_fanout: {len(lat)} of {args.instances} notices delivered to their subscribers, "
                         f"{len(base)} of {args.instances} in the baseline")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
