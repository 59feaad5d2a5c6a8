"""Ingest throughput: lifecycle events per second from JetStream into ClickHouse through the front end.

    .venv/bin/python -m bench.ingest [N]

Starts nats-server (JetStream) and `sco clickhouse serve` on free ports in a temp directory, publishes N
events (default 50,000) to SCO_EVENTS, then times the ingest (the same `Ingest` loop `sco ingest` runs:
fetch 2,000 with `stores.pull.Puller`, validate with `stores.eventrows` (stdlib fast path, pydantic `Event`
for the rest), one column-oriented Native insert over HTTP, acknowledge the batch in one write). Baseline
in the same run: inserting the same rows straight into the front end with clickhouse-connect, row-oriented
as a plain client would (no NATS, no validation) — the rate the ingest is compared to. The machine's load
moves both figures; compare the ratio, measured in one run.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from contracts.subjects import event_subject
from sco.stack import services
from stores import clickhouse, migrate
from stores import nats as sco_nats
from stores.ingest import EVENT_COLUMNS, Ingest, split_batch


def _payloads(n: int) -> list[tuple[str, bytes, str]]:
    out = []
    for i in range(n):
        event_id = str(uuid.UUID(int=(9 << 64) + i))
        body = {"event_id": event_id, "kind": "placed", "time": f"2026-11-{1 + i % 28:02d}T01:02:03.456Z",
                "region": f"r{i % 3}", "partition": f"p{i % 8}", "pool": f"pool-{i % 140}", "instance": f"i-{i}",
                "workload": f"w{i % 220}", "contract_version": "v7", "cause": "claim", "drill": i % 50 == 0,
                "source": "bench", "attributes": {"units": i % 16, "tier": "t2"}}
        out.append((event_subject(body["region"], "placed"), json.dumps(body).encode(), event_id))  # type: ignore[arg-type]
    return out


async def _publish(url: str, payloads: list[tuple[str, bytes, str]]) -> float:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    started = time.perf_counter()
    for start in range(0, len(payloads), 1000):
        await asyncio.gather(*(sco_nats.publish_raw(js, *p) for p in payloads[start:start + 1000]))
    elapsed = time.perf_counter() - started
    await nc.close()
    return elapsed


async def _ingest(nats_url: str, ch_url: str) -> tuple[float, int]:
    nc = await sco_nats.connect(nats_url)
    client = clickhouse.client(ch_url)
    ingest = Ingest(nc.jetstream(), client, batch_size=2000, fetch_timeout=0.5)
    await ingest.start()
    started = time.perf_counter()
    await ingest.run(idle_exit=True)
    elapsed = time.perf_counter() - started - 0.5  # the final empty fetch that ends the run
    await nc.close()
    client.close()
    return elapsed, ingest.inserted


class _Msg:
    def __init__(self, data: bytes) -> None:
        self.data = data


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    root = Path(tempfile.mkdtemp(prefix="sco-bench-ingest-"))
    nats = services.start_nats(root / "nats")
    ch = services.start_clickhouse(root / "ch")
    try:
        admin = clickhouse.client(ch.url)
        admin.command("CREATE DATABASE ingest")
        admin.command("CREATE DATABASE baseline")
        for db in ("ingest", "baseline"):
            client = clickhouse.client(f"{ch.url}/?database={db}")
            migrate.migrate_clickhouse(client)
            client.close()
        payloads = _payloads(n)

        base = clickhouse.client(f"{ch.url}/?database=baseline")
        rows = split_batch([_Msg(p[1]) for p in payloads]).rows
        started = time.perf_counter()
        for start in range(0, n, 2000):
            base.insert("events", rows[start:start + 2000], column_names=list(EVENT_COLUMNS))
        baseline_s = time.perf_counter() - started
        base.close()

        publish_s = asyncio.run(_publish(nats.url, payloads))
        ingest_s, inserted = asyncio.run(_ingest(nats.url, f"{ch.url}/?database=ingest"))
        stored = admin.command("SELECT count(DISTINCT event_id) FROM ingest.events")
        admin.close()
        print(f"events: {n:,}; ingested {inserted:,}, distinct in ClickHouse {stored:,}")
        print(f"baseline: clickhouse-connect insert, 2,000-row batches, no NATS: {n / baseline_s:,.0f} events/s")
        print(f"publish to JetStream (Nats-Msg-Id, 1,000 in flight): {n / publish_s:,.0f} events/s")
        print(f"ingest JetStream -> validate -> ClickHouse front end -> ack: {n / ingest_s:,.0f} events/s "
              f"({ingest_s:.2f} s; {baseline_s / ingest_s:.2f}x the baseline rate)")
        return 0 if stored == n else 1
    finally:
        services.stop_pid(ch.pid)
        services.stop_pid(nats.pid)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
