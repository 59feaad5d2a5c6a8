"""The contract cache: user-data at boot, refresh from the distributor, refusals, last good on disk."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent import __version__ as agent_version
from agent.bundle import BundleStore
from agent.drain.local import RecordingActuator
from agent.instruments import watch
from agent.metrics import Metrics
from agent.runtime import Agent
from agent.spool import Spool
from contracts.signing import load_private_key, sign_blob
from testkit.jsonserver import JsonServer
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, workload_entry

NODE = node_identity()


def test_a_bundle_signed_by_the_image_key_is_held_and_anything_else_is_refused_and_counted(tmp_path: Path) -> None:
    keys, other = new_keys(), new_keys()
    store = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    raw, sig = make_bundle(keys, NODE.partition, 1, [workload_entry("etl")])
    assert store.offer(raw, sig, "user-data").outcome == "accepted"
    tampered = raw.replace(b'"drain_budget_s":3', b'"drain_budget_s":9')
    assert tampered != raw
    wrong_key = make_bundle(other, NODE.partition, 2, [workload_entry("etl")])
    wrong_partition = make_bundle(keys, "r1/other", 2, [workload_entry("etl")])
    for bad_raw, bad_sig in ((tampered, sig), wrong_key, wrong_partition, (raw, b"bm90IGEgc2ln")):
        assert store.offer(bad_raw, bad_sig, "distributor").outcome == "refused"
    assert store.refused == 4 and store.current is not None and store.current.raw == raw
    assert "partition" in store.last_refused_reason or "signature" in store.last_refused_reason


def test_an_older_generation_is_refused_and_counted_and_a_newer_one_is_taken(tmp_path: Path) -> None:
    keys = new_keys()
    store = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    store.offer(*make_bundle(keys, NODE.partition, 5, [workload_entry("etl")]), "user-data")
    older = store.offer(*make_bundle(keys, NODE.partition, 4, [workload_entry("etl", budget=9)]), "d")
    assert older.outcome == "refused" and "older than the held 5" in older.reason
    assert store.refused == 1 and store.older == 1 and store.current is not None and store.current.generation == 5
    assert store.offer(*make_bundle(keys, NODE.partition, 6, [workload_entry("etl", budget=9)]), "d").outcome \
        == "accepted"
    assert store.current is not None and store.current.contracts["etl@1"].drain_budget_s == 9


def test_the_last_good_bundle_survives_a_restart_on_disk_and_never_expires(tmp_path: Path) -> None:
    keys = new_keys()
    old = datetime.now(UTC) - timedelta(days=30)
    first = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    first.offer(*make_bundle(keys, NODE.partition, 3, [workload_entry("etl")], issued_at=old), "distributor")
    second = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    offer = second.load_disk()
    assert offer is not None and offer.outcome == "accepted" and second.current is not None
    assert second.current.generation == 3
    assert second.age_seconds(datetime.now(UTC)) > 29 * 86400  # stale, reported, still held
    assert math.isnan(BundleStore(tmp_path / "x", keys.public_pem, NODE.partition).age_seconds(datetime.now(UTC)))


def test_a_tampered_refresh_is_refused_and_the_agent_keeps_draining_with_the_old_bundle(tmp_path: Path) -> None:
    keys = new_keys()
    good = make_bundle(keys, NODE.partition, 1, [workload_entry("etl", budget=3)])
    dist = JsonServer()
    newer_raw, newer_sig = make_bundle(keys, NODE.partition, 2, [workload_entry("etl", budget=3)])
    dist.serve_bundle("/r1/slurm-batch/", newer_raw.replace(b'"drain_budget_s":3', b'"drain_budget_s":99'),
                      newer_sig)
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, good, distributor_url=dist.url + "/r1/slurm-batch/")
    sched = FakeScheduler()

    async def run() -> tuple[str, Agent]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        outcome = await agent.refresh_once()
        await agent.stop()
        return outcome, agent

    try:
        outcome, agent = asyncio.run(run())
    finally:
        dist.stop()
    assert outcome == "refused"
    assert agent.bundles.current is not None and agent.bundles.current.generation == 1
    assert agent.bundles.current.contracts["etl@1"].drain_budget_s == 3
    assert agent.metrics.value("sco_agent_bundle_refused_total") == 1
    assert agent.metrics.value("sco_agent_bundle_generation") == 1
    spooled = [p.read_text() for p in (cfg.state_dir / "spool").glob("*.json")]
    assert any('"bundle-refused"' in s and "distributor" in s for s in spooled)
    assert sched.ready_calls == [(True, "")]
    # every event says which agent version and bundle generation the node runs (ADR-32)
    refused = [json.loads(s) for s in spooled if '"bundle-refused"' in s]
    assert refused and all(e["attributes"]["agent_version"] == agent_version and
                           e["attributes"]["bundle_generation"] == 1 for e in refused)


def test_a_valid_refresh_replaces_the_bundle_and_an_unreachable_distributor_changes_nothing(tmp_path: Path) -> None:
    keys = new_keys()
    dist = JsonServer()
    dist.serve_bundle("/p/", *make_bundle(keys, NODE.partition, 2, [workload_entry("etl", budget=7)]))
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, [workload_entry("etl")]),
                                distributor_url=dist.url + "/p/")

    async def run() -> list[str]:
        agent = Agent(cfg, ud, pub, FakeScheduler(), RecordingActuator())
        await agent.start(connect=False)
        out = [await agent.refresh_once()]
        dist.stop()
        out.append(await agent.refresh_once())
        assert agent.bundles.current is not None
        out.append(str(agent.bundles.current.contracts["etl@1"].drain_budget_s))
        await agent.stop()
        return out

    assert asyncio.run(run()) == ["accepted", "unreachable", "7"]


def test_without_any_valid_contract_the_node_is_reported_not_ready_until_one_arrives(tmp_path: Path) -> None:
    keys, other = new_keys(), new_keys()
    dist = JsonServer()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(other, NODE.partition, 1, [workload_entry("e")]),
                                distributor_url=dist.url + "/p/")
    sched = FakeScheduler()

    async def run() -> tuple[bool | None, bool | None, float]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        before = agent.ready
        ready_gauge = agent.metrics.value("sco_agent_ready")
        dist.serve_bundle("/p/", *make_bundle(keys, NODE.partition, 1, [workload_entry("e")]))
        await agent.refresh_once()
        after = agent.ready
        await agent.stop()
        return before, after, ready_gauge

    try:
        before, after, gauge = asyncio.run(run())
    finally:
        dist.stop()
    assert before is False and gauge == 0.0 and after is True
    assert sched.ready_calls[0][0] is False and "signature" in sched.ready_calls[0][1]
    assert sched.ready_calls[-1] == (True, "")


def test_another_generation_with_the_held_number_but_other_content_is_refused(tmp_path: Path) -> None:
    keys = new_keys()
    store = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    store.offer(*make_bundle(keys, NODE.partition, 5, [workload_entry("etl")]), "distributor")
    raw, _ = make_bundle(keys, NODE.partition, 5, [workload_entry("etl", budget=9)])
    forked = raw.replace(b'"source_digest":"sha256:', b'"source_digest":"sha256:f', 1)
    offer = store.offer(forked, sign_blob(forked, load_private_key(keys.private_pem)), "distributor")
    assert offer.outcome == "refused" and "other content" in offer.reason and store.refused == 1
    assert store.current is not None and store.current.contracts["etl@1"].drain_budget_s != 9


def test_the_user_data_copy_behind_the_cache_on_disk_is_not_counted_as_a_refusal(tmp_path: Path) -> None:
    keys = new_keys()
    store = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    store.offer(*make_bundle(keys, NODE.partition, 7, [workload_entry("etl")]), "distributor")
    rebooted = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    assert rebooted.load_disk() is not None
    boot_copy = rebooted.offer(*make_bundle(keys, NODE.partition, 2, [workload_entry("etl")]), "user-data")
    assert boot_copy.outcome == "older" and rebooted.refused == 0
    assert rebooted.current is not None and rebooted.current.generation == 7


def test_another_partitions_bundle_is_refused_and_counted_in_the_refused_metric(tmp_path: Path) -> None:
    keys = new_keys()
    store = BundleStore(tmp_path, keys.public_pem, NODE.partition)
    store.offer(*make_bundle(keys, NODE.partition, 1, [workload_entry("etl")]), "user-data")
    offer = store.offer(*make_bundle(keys, "r9/elsewhere", 9, [workload_entry("etl")]), "distributor")
    metrics = Metrics()
    watch(metrics, store, Spool(tmp_path / "spool"), lambda: datetime.now(UTC), lambda: False)
    assert offer.outcome == "refused" and "partition" in offer.reason
    assert "sco_agent_bundle_refused_total 1" in metrics.render()
