"""Ingest throughput: lifecycle events per second from JetStream into ClickHouse through the front end.

    .venv/bin/python -m bench.ingest [N] [--batch B]

Starts nats-server (JetStream) and `sco clickhouse serve` on free ports in a temp directory, publishes N
events (default 100,000) to SCO_EVENTS, then times the ingest (the same `Ingest` loop `sco ingest` runs:
fetch B (default 2,000) with `stores.pull.Puller`, validate with `stores.eventrows` (orjson fast path,
pydantic `Event` for anything not canonical), one `JSONCompactColumns` insert over HTTP — into
`events_ingest`, whose views store the rows with new ids and record the ids (`stores.eventids`) — acknowledge
the batch in one write). Baseline in the same run: inserting the same rows (built by pydantic,
untimed) straight into the front end with clickhouse-connect, row-oriented in 2,000-row batches as a plain
client would (no NATS, no validation), into an events table without the view that records event ids. Target
(DESIGN §6): ingest ≥ 0.5× the baseline rate. The machine's load moves both figures; compare the ratio,
measured in one run. Exit 0 on PASS, 1 on FAIL, 2 when a figure cannot be
produced (events missing in ClickHouse, a service not starting).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from bench._cli import stop_on_signals
from contracts.events import Event
from contracts.subjects import event_subject
from sco.stack import natsserver, services
from stores import clickhouse, eventids, migrate
from stores import nats as sco_nats
from stores.ingest import EVENT_COLUMNS, Ingest

TARGET = 0.5
BASELINE_BATCH = 2000


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


def _children(task: Path) -> list[str]:
    """The child pids of one thread; none when the thread ended while being read (the front end's threads come
    and go: a thread's children pass to another thread of its process, read in turn)."""
    try:
        return (task / "children").read_text().split()
    except (FileNotFoundError, ProcessLookupError):
        return []


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process and its children (the front end's engine) have used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    children = [int(child) for task in Path(f"/proc/{pid}/task").iterdir() for child in _children(task)]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(_cpu_s(c) for c in children)


class _Cpu:
    """CPU seconds of this process and the servers over a phase: a figure the machine's load moves less."""

    def __init__(self, *pids: int) -> None:
        self.pids = pids
        self.start = self._now()
        self.used: list[float] = []

    def _now(self) -> list[float]:
        return [time.process_time(), *(_cpu_s(pid) for pid in self.pids)]

    def stop(self) -> None:
        self.used = [b - a for a, b in zip(self.start, self._now(), strict=True)]


async def _ingest(nats_url: str, ch_url: str, batch: int, n: int) -> float:
    """Seconds from the first fetch until all ``n`` events are inserted and acknowledged."""
    nc = await sco_nats.connect(nats_url)
    client = clickhouse.client(ch_url)
    ingest = Ingest(nc.jetstream(), client, batch_size=batch, fetch_timeout=0.5)
    await ingest.start()
    stop = asyncio.Event()
    started = time.perf_counter()
    elapsed = 0.0

    async def watch() -> None:
        nonlocal elapsed
        while ingest.inserted < n:
            await asyncio.sleep(0.002)
        elapsed = time.perf_counter() - started
        stop.set()

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(ingest.run(stop), timeout=120 + n / 100)
    await watcher
    await nc.close()
    client.close()
    return elapsed


def _baseline(url: str, payloads: list[tuple[str, bytes, str]], pids: tuple[int, ...]) -> tuple[float, _Cpu]:
    """Seconds for clickhouse-connect to insert the rows (pydantic ``Event.row()``, built before the clock).

    One small insert first, outside the clock: clickhouse-connect imports pandas on its first insert.
    """
    rows = []
    for _, data, _ in payloads:
        row = Event.model_validate_json(data).row()
        rows.append([row[c] for c in EVENT_COLUMNS])
    base = clickhouse.client(url)
    base.insert("events", rows[:10], column_names=list(EVENT_COLUMNS))
    base.command("TRUNCATE TABLE events")
    cpu = _Cpu(*pids)
    started = time.perf_counter()
    for start in range(0, len(rows), BASELINE_BATCH):
        base.insert("events", rows[start:start + BASELINE_BATCH], column_names=list(EVENT_COLUMNS))
    elapsed = time.perf_counter() - started
    cpu.stop()
    base.close()
    return elapsed, cpu


def _setup(url: str) -> None:
    admin = clickhouse.client(url)
    for db in ("ingest", "baseline"):
        admin.command(f"CREATE DATABASE {db}")
        client = clickhouse.client(f"{url}/?database={db}")
        migrate.migrate_clickhouse(client)
        if db == "baseline":  # the plain insert stays plain: no view recording event ids behind its table
            client.command(f"DROP VIEW {eventids.VIEW}")
        client.close()
    admin.close()


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(prog="bench.ingest")
    parser.add_argument("events", nargs="?", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2000, help="the ingest's fetch and insert batch")
    args = parser.parse_args(argv)
    n = args.events
    root = Path(tempfile.mkdtemp(prefix="sco-bench-ingest-"))
    nats = natsserver.start_nats(root / "nats")
    ch = services.start_clickhouse(root / "ch")
    try:
        _setup(ch.url)
        payloads = _payloads(n)
        baseline_s, base_cpu = _baseline(f"{ch.url}/?database=baseline", payloads, (nats.pid, ch.pid))
        publish_s = asyncio.run(_publish(nats.url, payloads))
        ingest_cpu = _Cpu(nats.pid, ch.pid)
        ingest_s = asyncio.run(_ingest(nats.url, f"{ch.url}/?database=ingest", args.batch, n))
        ingest_cpu.stop()
        admin = clickhouse.client(ch.url)
        stored = admin.command("SELECT count(DISTINCT event_id) FROM ingest.events")
        based = admin.command("SELECT count(DISTINCT event_id) FROM baseline.events")
        admin.close()
        load = Path("/proc/loadavg").read_text().split()[0]
        print(f"events: {n:,}; distinct in ClickHouse: ingest {stored:,}, baseline {based:,}; load average {load}")
        print(f"baseline: clickhouse-connect insert, {BASELINE_BATCH:,}-row batches, no NATS: "
              f"{n / baseline_s:,.0f} events/s")
        print(f"publish to JetStream (Nats-Msg-Id, 1,000 in flight): {n / publish_s:,.0f} events/s")
        ratio = baseline_s / ingest_s
        print(f"ingest JetStream -> validate -> ClickHouse front end -> ack ({args.batch:,} a batch): "
              f"{n / ingest_s:,.0f} events/s ({ingest_s:.2f} s)")
        for name, cpu in (("baseline", base_cpu), ("ingest", ingest_cpu)):
            own, nats_cpu, front = (u / n * 1e6 for u in cpu.used)
            print(f"CPU per 1,000 events, {name}: {own + nats_cpu + front:.0f} ms (client process {own:.0f}, "
                  f"nats-server {nats_cpu:.0f}, front end {front:.0f})")
        if stored != n or based != n:
            print(f"FAIL: no figure — {stored:,} / {based:,} of {n:,} events in ClickHouse")
            return 2
        verdict = "PASS" if ratio >= TARGET else "FAIL"
        print(f"{verdict}: ingest / baseline = {ratio:.2f}x (target >= {TARGET}x)")
        return 0 if verdict == "PASS" else 1
    except Exception as exc:  # a service that did not start, a store error: no figure
        print(f"FAIL: no figure — {type(exc).__name__}: {exc}")
        return 2
    finally:
        services.stop_pid(ch.pid)
        services.stop_pid(nats.pid)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
