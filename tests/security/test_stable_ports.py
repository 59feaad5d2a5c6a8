"""After a crash (kill -9 of NATS and the ClickHouse front end), ``sco up`` brings each server back on the port
``stack.json`` recorded, so a running ingest — never restarted — reconnects where it was and stores every
event, those published before the crash and those after it; nothing is lost, nothing is stored twice."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from sco.stack import bootstrap, manager, services
from stores import clickhouse
from stores import nats as sco_nats
from stores.config import ENV_VARS, load_urls
from tests.stores.helpers import make_event

pytestmark = pytest.mark.services
BEFORE, AFTER = 300, 300


@pytest.fixture
def stack() -> Iterator[Path]:
    # not pytest's tmp_path: every pytest session on the host resets /tmp/pytest-of-<user> to 0700, which would
    # cut the servers' own accounts off their data directories mid-test
    home = Path(tempfile.mkdtemp(prefix="sco-ports-")) / ".sco"
    try:
        with mock.patch.dict(os.environ):
            for var in ENV_VARS.values():
                os.environ.pop(var, None)
            manager.up(home, env={}, fast=True)
            bootstrap.prepare(load_urls(home))
        yield home
    finally:
        manager.down(home)
        shutil.rmtree(home.parent, ignore_errors=True)


def _services(home: Path) -> dict[str, Any]:
    return dict(json.loads((home / "stack.json").read_text())["services"])


async def _publish(url: str, first: int, count: int) -> None:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await asyncio.gather(*(sco_nats.publish_event(js, make_event(i)) for i in range(first, first + count)))
    await nc.close()


def _stored(url: str) -> int:
    client = clickhouse.client(url)
    try:
        return int(client.command("SELECT count() FROM events"))
    finally:
        client.close()


def _wait_stored(url: str, want: int, within_s: float) -> int:
    deadline, got = time.monotonic() + within_s, -1
    while time.monotonic() < deadline:
        try:
            got = _stored(url)
        except Exception:
            got = -1
        if got >= want:
            return got
        time.sleep(0.5)
    return got


# beside the ClickHouse outage test its freed port could be taken by this test's fresh stack, and the other way
# round after the kill: both hold a port across a restart, so they run one after the other
@pytest.mark.xdist_group("port-restarts")
def test_after_a_kill_9_sco_up_reuses_the_recorded_ports_and_a_running_ingest_loses_nothing(stack: Path) -> None:
    admin, ingest_urls = load_urls(stack), json.loads((stack / "stack.json").read_text())["components"]["ingest"]
    assert admin.nats and admin.clickhouse
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCO_")}
    env.update({"SCO_NATS_URL": ingest_urls["nats"], "SCO_CLICKHOUSE_URL": ingest_urls["clickhouse"]})
    log = stack.parent / "ingest.log"
    with log.open("wb") as out:
        ingest = subprocess.Popen([sys.executable, "-m", "sco", "ingest"], env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        asyncio.run(_publish(admin.nats, 0, BEFORE))
        assert _wait_stored(admin.clickhouse, BEFORE, 120) == BEFORE, log.read_text()[-3000:]
        before = _services(stack)
        for store in ("nats", "clickhouse"):       # a crash: no clean shutdown, the ports are left behind
            os.kill(int(before[store]["pid"]), signal.SIGKILL)
        for store in ("nats", "clickhouse"):
            for _ in range(600):
                if not services.pid_alive(int(before[store]["pid"])):
                    break
                time.sleep(0.05)
        rows = {r.name: r for r in manager.up(stack, env={}, fast=True)}
        after = _services(stack)
        assert {s: rows[s].action for s in ("nats", "clickhouse")} == {"nats": "started", "clickhouse": "started"}
        assert {s: after[s]["port"] for s in before} == {s: before[s]["port"] for s in before}
        assert after["nats"]["pid"] != before["nats"]["pid"]
        asyncio.run(_publish(admin.nats, BEFORE, AFTER))
        stored = _wait_stored(admin.clickhouse, BEFORE + AFTER, 180)
        assert ingest.poll() is None, log.read_text()[-2000:]   # the same process all along
        assert stored == BEFORE + AFTER       # every event, none twice (count() without FINAL)
    finally:
        ingest.terminate()
        ingest.wait(20)
