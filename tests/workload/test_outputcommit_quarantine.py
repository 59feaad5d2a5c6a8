"""Attempt counting and quarantine (ADR-21), on the in-memory store double, and the quarantine event on a real
NATS server."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from contracts.events import Event
from contracts.subjects import EventKind, quarantine_subject
from workload.checkpoint import Encryption, MemoryStore
from workload.checkpoint.errors import NotFound, StoreError
from workload.outputcommit import (
    NatsPublisher,
    OutputCommitter,
    Quarantined,
    RecordingNotifier,
    RecordingPublisher,
    UnitOwner,
)

OWNER = UnitOwner("risk-batch-eod", "4", "risk-owner@example.org", "r1", "r1/k8s-prod")
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _committer(store: MemoryStore, publisher: object | None = None) -> tuple[OutputCommitter, RecordingNotifier]:
    store.ensure_bucket("b")
    notifier = RecordingNotifier()
    clock = iter(T0 + timedelta(minutes=i) for i in range(1000))
    oc = OutputCommitter(store, "b", Encryption(kms_key_id="k"), OWNER,
                         publisher=publisher or RecordingPublisher(),  # type: ignore[arg-type]
                         notifier=notifier, clock=lambda: next(clock))
    return oc, notifier


def test_four_attempts_ended_by_reclaim_quarantine_the_unit_with_an_event_and_an_owner_notification() -> None:
    publisher = RecordingPublisher()
    oc, notifier = _committer(MemoryStore(), publisher)
    for n in range(1, 4):
        attempt = oc.begin("unit-7")
        assert attempt.number == n
        assert oc.end_by_reclaim(attempt) is False
    assert publisher.messages == [] and notifier.sent == []
    assert oc.end_by_reclaim(oc.begin("unit-7")) is True
    [(subject, payload, msg_id)] = publisher.messages
    assert subject == quarantine_subject("r1", "r1/k8s-prod") == "sco.quarantine.r1.r1_k8s-prod"
    event = Event.from_json(payload)
    assert event.kind is EventKind.QUARANTINED and str(event.event_id) == msg_id
    assert (event.workload, event.contract_version, event.partition) == ("risk-batch-eod", "4", "r1/k8s-prod")
    assert event.attributes["unit"] == "unit-7" and event.attributes["reclaim_ended"] == 4
    [(owner, title, body)] = notifier.sent
    assert owner == "risk-owner@example.org" and "unit-7" in title and "risk-batch-eod@4" in body
    with pytest.raises(Quarantined, match="quarantined after 4 attempts"):
        oc.begin("unit-7")
    assert len(publisher.messages) == 1  # announced once
    oc.release("unit-7")
    assert oc.begin("unit-7").number == 5


def test_attempts_left_running_by_a_vanished_node_count_as_ended_by_reclaim() -> None:
    oc, notifier = _committer(MemoryStore())
    for _ in range(4):
        oc.begin("u")  # never committed: the node went away under it
    with pytest.raises(Quarantined):
        oc.begin("u")
    assert oc.reclaim_ended("u") == 4 and len(notifier.sent) == 1


def test_a_completed_attempt_is_not_counted_and_a_failed_publish_shows_nothing() -> None:
    store = MemoryStore()
    oc, _ = _committer(store)
    a = oc.begin("u")
    oc.stage(a, "x.csv", b"1")
    oc.stage(a, "y.csv", b"2")
    store.fail_puts.add("output/u/_SUCCESS")
    with pytest.raises(StoreError):
        oc.commit(a)  # copies done, marker failed: the output is not visible
    assert oc.published("u") is None
    with pytest.raises(NotFound):
        oc.read("u", "x.csv")
    store.fail_puts.clear()
    assert oc.commit(a).names == ("x.csv", "y.csv")
    assert oc.reclaim_ended("u") == 0


def test_output_names_with_slashes_or_the_marker_name_are_refused() -> None:
    oc, _ = _committer(MemoryStore())
    a = oc.begin("u")
    for bad in ("../x", "a/b", "_SUCCESS", ""):
        with pytest.raises(ValueError, match="without '/'"):
            oc.stage(a, bad, b"")


def test_the_quarantine_event_reaches_a_real_nats_subscriber(nats_url: str) -> None:
    received: list[bytes] = []

    async def listen_then_quarantine() -> None:
        import nats as nats_py

        nc = await nats_py.connect(nats_url)
        sub = await nc.subscribe(quarantine_subject("r1", "r1/k8s-prod"))
        await nc.flush()
        oc, _ = _committer(MemoryStore(), NatsPublisher(nats_url))
        for _ in range(4):
            await asyncio.to_thread(lambda: oc.end_by_reclaim(oc.begin("u9")))
        msg = await sub.next_msg(timeout=30)
        received.append(msg.data)
        await nc.close()

    asyncio.run(listen_then_quarantine())
    assert json.loads(received[0])["kind"] == "quarantined"


def test_the_quarantine_event_is_published_through_a_cluster_url_list_whose_first_server_is_down(
        nats_url: str) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on: the cluster's member that is down
        s.bind(("127.0.0.1", 0))
        dead = f"nats://127.0.0.1:{s.getsockname()[1]}"
    received: list[bytes] = []

    async def listen_then_publish() -> None:
        import nats as nats_py

        nc = await nats_py.connect(nats_url)
        sub = await nc.subscribe("sco.test.cluster-list")
        await nc.flush()
        publisher = NatsPublisher(f"{dead}, {nats_url}")
        await asyncio.to_thread(publisher.publish, "sco.test.cluster-list", b"q", "m-1")
        received.append((await sub.next_msg(timeout=30)).data)
        await nc.close()

    asyncio.run(listen_then_publish())
    assert received == [b"q"]


def test_a_nats_publisher_without_any_server_is_refused_with_the_fix_named() -> None:
    with pytest.raises(ValueError, match="comma-separated list"):
        NatsPublisher(" , ")
