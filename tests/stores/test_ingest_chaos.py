"""No event lost, none duplicated: 100,000 events published while the ingest process is killed (SIGKILL)
and restarted twice and nats-server is restarted once; ClickHouse ends with exactly 100,000 distinct events.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from contracts.subjects import EVENTS_STREAM, event_subject
from stores import clickhouse
from stores import nats as sco_nats
from testkit.nats import NatsProcess
from testkit.paths import REPO

N = 100_000


def _payloads(n: int) -> list[tuple[str, bytes, str]]:
    out = []
    for i in range(n):
        event_id = str(uuid.UUID(int=(7 << 64) + i))
        region = f"r{i % 3}"
        body = {"event_id": event_id, "kind": "drained", "time": f"2026-11-{1 + i % 28:02d}T00:00:{i % 60:02d}Z",
                "region": region, "partition": "p1", "pool": f"pool-{i % 140}", "instance": f"i-{i}",
                "workload": f"w{i % 220}", "contract_version": "v1", "cause": "notice", "drill": False,
                "source": "chaos-test", "attributes": {"seq": i}}
        out.append((event_subject(region, "drained"), json.dumps(body).encode(), event_id))
    return out


class IngestProcess:
    def __init__(self, nats_url: str, clickhouse_url: str, log: Path) -> None:
        self.argv = [sys.executable, "-m", "stores.ingest", "--nats", nats_url, "--clickhouse", clickhouse_url,
                     "--batch", "2000", "--ack-wait", "5"]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


async def _publish_all(nats: NatsProcess, ingest: IngestProcess, payloads: list[tuple[str, bytes, str]],
                       count_in_clickhouse: Callable[[], int], chaos_log: list[str]) -> None:
    nc = await sco_nats.connect(nats.url, name="chaos-publisher")
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)

    async def publish(subject: str, payload: bytes, msg_id: str) -> None:
        while True:  # an agent's spool: retry until the stream acknowledges (same Nats-Msg-Id each time)
            try:
                await sco_nats.publish_raw(js, subject, payload, msg_id, timeout=2)
                return
            except Exception:
                await asyncio.sleep(0.2)

    chaos = {20_000: "kill-ingest", 50_000: "restart-nats", 80_000: "kill-ingest"}
    window = 1000
    for start in range(0, len(payloads), window):
        action = chaos.get(start)
        if action == "kill-ingest":
            in_ch = await asyncio.to_thread(count_in_clickhouse)
            ingest.kill()
            chaos_log.append(f"killed ingest at {start} published, {in_ch} in ClickHouse")
            await asyncio.sleep(0.3)
            ingest.start()
        restart = None
        if action == "restart-nats":  # SIGKILL while this window's publishes are in flight, same port and store
            restart = asyncio.create_task(asyncio.to_thread(nats.restart, True))
            chaos_log.append(f"killed (SIGKILL) and restarted nats-server at {start} published")
        await asyncio.gather(*(publish(*p) for p in payloads[start:start + window]))
        if restart is not None:
            await restart
    await nc.close()


async def _stream_messages(url: str) -> int:
    nc = await sco_nats.connect(url)
    info = await nc.jetstream().stream_info(EVENTS_STREAM)
    await nc.close()
    return int(info.state.messages)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_100k_events_survive_two_ingest_kills_and_a_nats_restart_with_none_lost_and_none_duplicated(
        nats_server: NatsProcess, clickhouse_migrated_url: str, tmp_path: Path) -> None:
    payloads = _payloads(N)
    client = clickhouse.client(clickhouse_migrated_url)

    def distinct() -> int:
        return int(client.command("SELECT count(DISTINCT event_id) FROM events"))

    ingest = IngestProcess(nats_server.url, clickhouse_migrated_url, tmp_path / "ingest.log")
    ingest.start()
    chaos_log: list[str] = []
    started = time.monotonic()
    try:
        asyncio.run(_publish_all(nats_server, ingest, payloads, distinct, chaos_log))
        published_s = time.monotonic() - started
        deadline = time.monotonic() + 120
        while distinct() < N and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        ingest.stop()
    total_s = time.monotonic() - started
    print(f"published in {published_s:.1f} s, all in ClickHouse after {total_s:.1f} s; " + "; ".join(chaos_log))

    assert len(chaos_log) == 3
    assert asyncio.run(_stream_messages(nats_server.url)) == N  # the publisher's retries were deduplicated
    assert distinct() == N
    assert client.command("SELECT count() FROM events FINAL") == N
    stored = {r[0] for r in client.query("SELECT DISTINCT event_id FROM events").result_rows}
    assert stored == {p[2] for p in payloads}
    raw = client.command("SELECT count() FROM events")
    print(f"rows before merge: {raw} ({raw - N} redelivered copies, collapsed by ReplacingMergeTree)")
    client.close()
