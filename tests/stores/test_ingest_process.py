"""The ``sco-ingest`` process loads only what its path needs: a restart under load is mostly imports (issue 15).

pydantic (only for a payload the fast path does not take), aiohttp (nats-py's WebSocket transport) and
pandas (clickhouse-connect's first Native insert) stay out of a process that ingests canonical events.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from stores import clickhouse
from stores import nats as sco_nats
from testkit.paths import REPO
from tests.stores.helpers import make_event

pytestmark = pytest.mark.services

# Runs ``python -m stores.ingest`` as the supervisor would, and says at exit which heavy modules it loaded.
_PROBE = textwrap.dedent("""
    import atexit, runpy, sys
    HEAVY = ("pydantic", "aiohttp", "pandas")
    atexit.register(lambda: print("LOADED", [m for m in HEAVY if sys.modules.get(m) is not None]))
    sys.argv = ["stores.ingest", *sys.argv[1:]]
    runpy.run_module("stores.ingest", run_name="__main__")
""")


async def _publish(url: str, n: int) -> None:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    for i in range(n):
        await sco_nats.publish_event(js, make_event(i))
    await nc.close()


def _ingest_once(nats_url: str, clickhouse_url: str) -> str:
    done = subprocess.run([sys.executable, "-c", _PROBE, "--nats", nats_url, "--clickhouse", clickhouse_url,
                           "--once"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_ingest_process_stores_canonical_events_without_importing_pydantic_aiohttp_or_pandas(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    asyncio.run(_publish(nats_url, 20))
    out = _ingest_once(nats_url, clickhouse_migrated_url)
    assert "inserted 20 events" in out
    assert "LOADED []" in out
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        assert client.command("SELECT count() FROM events FINAL") == 20
    finally:
        client.close()


def test_a_payload_the_fast_path_does_not_take_still_gets_pydantics_verdict_in_the_process(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    asyncio.run(_publish(nats_url, 3))
    bad = (b'{"kind": "placed", "time": "2026-11-01T00:00:00Z", "region": "r1", "cause": "x", "drill": "maybe",'
           b' "event_id": "00000000-0000-0000-0000-0000000000ff"}')

    async def publish_bad() -> None:
        nc = await sco_nats.connect(nats_url)
        await sco_nats.publish_raw(nc.jetstream(), "sco.events.r1.placed", bad, "bad-1")
        await nc.close()

    asyncio.run(publish_bad())
    out = _ingest_once(nats_url, clickhouse_migrated_url)
    assert "inserted 3 events, dead-lettered 1" in out
    assert "LOADED ['pydantic']" in out  # imported for the one payload, which it refused
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        reason = client.command("SELECT reason FROM events_dead_letter")
    finally:
        client.close()
    assert "drill" in str(reason) and "not a valid event" in str(reason)
