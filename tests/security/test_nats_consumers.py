"""NATS: a durable consumer belongs to one component. Only the ingest binds, fetches from, acknowledges or deletes
``sco-ingest``; the exclusion watcher (the controller's credential) and the read-only ``watcher`` get a
permissions violation for each, logged by nats-server, and the ingest's consumer is exactly as it was — no
event acknowledged behind its back, none missing, no replay forced. Each keeps its own consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import nats
import pytest

from sco.stack import credentials
from stores import nats as sco_nats
from stores.ingest import CONSUMER, EVENT_SUBJECT
from stores.nats import EVENTS_STREAM
from testkit.nats import NatsProcess
from tests.support.wait import until

pytestmark = pytest.mark.services
INTRUDERS = ("controller", "watcher", "region", "relay")
EVENTS = 6


@pytest.fixture
def stack_nats() -> Iterator[NatsProcess]:
    """A nats-server with exactly the users and permissions ``sco up`` writes."""
    server = NatsProcess(users=[u for u in credentials.nats_users(credentials.generate()) if u.name != "admin"])
    server.start()
    try:
        yield server
    finally:
        server.close()


async def _connect(server: NatsProcess, user: str, errors: list[str]) -> Any:
    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    return await sco_nats.connect(server.url_for(user), error_cb=on_error, allow_reconnect=False,
                                  max_reconnect_attempts=0)


async def _ingest_holds_one_unacked(server: NatsProcess) -> tuple[Any, Any]:
    """The streams, ``EVENTS`` events, and the ingest's consumer with one fetched, not yet acknowledged event."""
    from nats.js.api import AckPolicy, ConsumerConfig

    admin = await nats.connect(server.url)
    js = admin.jetstream()
    await sco_nats.ensure_events_stream(js)
    for n in range(EVENTS):
        await js.publish(f"sco.events.r1.placed.i-{n}", b"{}", headers={"Nats-Msg-Id": f"e{n}"})
    await admin.close()
    ingest = await _connect(server, "ingest", [])
    sub = await ingest.jetstream().pull_subscribe(EVENT_SUBJECT, durable=CONSUMER, stream=EVENTS_STREAM,
                                                  config=ConsumerConfig(durable_name=CONSUMER,
                                                                        ack_policy=AckPolicy.EXPLICIT, ack_wait=600))
    held = (await sub.fetch(1, timeout=5))[0]
    return ingest, held


async def _attempt(label: str, action: Any, out: dict[str, str]) -> None:
    try:
        await action
        out[label] = "done"
    except Exception as exc:
        out[label] = f"{type(exc).__name__}: {exc}"


async def _intrude(server: NatsProcess, user: str, ack_subject: str) -> tuple[dict[str, str], list[str]]:
    """Everything a credential could try on the ingest's consumer: look, bind and fetch, acknowledge the event
    the ingest holds, re-create it under its own name (legacy and named forms, to refilter it), delete it."""
    from nats.js.api import ConsumerConfig

    errors: list[str] = []
    nc = await _connect(server, user, errors)
    js, out = nc.jetstream(timeout=1.0), {}
    hijack = ConsumerConfig(durable_name=CONSUMER, filter_subject="sco.events.nowhere.>")
    await _attempt("info", js.consumer_info(EVENTS_STREAM, CONSUMER), out)

    async def fetch() -> None:
        sub = await js.pull_subscribe_bind(durable=CONSUMER, stream=EVENTS_STREAM)
        await sub.fetch(EVENTS, timeout=1.0)

    await _attempt("fetch", fetch(), out)
    await nc.publish(ack_subject, b"+ACK")
    await _attempt("create", js._jsm._api_request(f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}.{CONSUMER}",
                                                  _request(hijack, named=True), timeout=1.0), out)
    await _attempt("durable-create", js._jsm._api_request(
        f"$JS.API.CONSUMER.DURABLE.CREATE.{EVENTS_STREAM}.{CONSUMER}", _request(hijack), timeout=1.0), out)
    await _attempt("legacy-create", js._jsm._api_request(f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}",
                                                         _request(hijack, named=True), timeout=1.0), out)
    await _attempt("legacy-named", js._jsm._api_request(f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}", _request(
        ConsumerConfig(filter_subject="sco.events.nowhere.>"), named=True), timeout=1.0), out)
    await _attempt("delete", js.delete_consumer(EVENTS_STREAM, CONSUMER), out)
    await nc.flush(timeout=2)
    # the -ERR for the acknowledgement arrives after the flush's PONG
    await until(lambda: any(ack_subject.lower() in e.lower() for e in errors))
    await nc.close()
    return out, errors


def _request(config: Any, named: bool = False) -> bytes:
    import json

    body = config.as_dict()
    if named:
        body["name"] = CONSUMER
    return json.dumps({"stream_name": EVENTS_STREAM, "config": body}).encode()


def test_no_credential_but_the_ingests_touches_its_consumer_and_it_loses_nothing(stack_nats: NatsProcess) -> None:
    async def scenario() -> tuple[dict[str, tuple[dict[str, str], list[str]]], Any, Any]:
        ingest, held = await _ingest_holds_one_unacked(stack_nats)
        try:
            tried = {user: await _intrude(stack_nats, user, held.reply) for user in INTRUDERS}
            info = await ingest.jetstream().consumer_info(EVENTS_STREAM, CONSUMER)
            await held.ack_sync()  # the ingest's own acknowledgement still counts; the server confirms it
            return tried, info, await ingest.jetstream().consumer_info(EVENTS_STREAM, CONSUMER)
        finally:
            await ingest.close()

    tried, info, after_own_ack = asyncio.run(scenario())
    for user, (out, errors) in tried.items():
        assert all(result != "done" for result in out.values()), (user, out)
        for subject in (f"$JS.API.CONSUMER.INFO.{EVENTS_STREAM}.{CONSUMER}",
                        f"$JS.API.CONSUMER.DELETE.{EVENTS_STREAM}.{CONSUMER}",
                        f"$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}.{CONSUMER}"):
            assert any(f'permissions violation for publish to "{subject}"'.lower() in e.lower() for e in errors), (
                user, subject, errors)
        assert any("permissions violation for publish to \"$js.ack." in e.lower() for e in errors), (user, errors)
    assert info.config.filter_subject == EVENT_SUBJECT        # not refiltered
    assert info.num_ack_pending == 1 and info.ack_floor.stream_seq == 0   # the held event: nobody else acked it
    assert info.num_pending == EVENTS - 1                     # nobody fetched the rest away
    assert after_own_ack.ack_floor.stream_seq == 1
    log = (stack_nats.data_dir / "nats.log").read_text()
    for user in INTRUDERS:  # nats-server logs every refusal with the user's name
        assert (f'"$G/user:{user}" - Publish Violation - Subject "$JS.API.CONSUMER.DELETE.{EVENTS_STREAM}.{CONSUMER}"'
                in log), user


def test_the_exclusion_watcher_keeps_its_own_consumer_and_an_observer_its_core_subscription(
        stack_nats: NatsProcess) -> None:
    async def scenario() -> tuple[int, list[str], int, list[str]]:
        ingest, _ = await _ingest_holds_one_unacked(stack_nats)
        await ingest.close()
        controller_errors: list[str] = []
        controller = await _connect(stack_nats, "controller", controller_errors)
        sub = await controller.jetstream().pull_subscribe("sco.events.r1.>", durable="sco-exclusion-r1",
                                                          stream=EVENTS_STREAM)
        taken = 0
        while taken < EVENTS:  # a fetch may return fewer than asked; each ack waits for the server's confirmation
            for m in await sub.fetch(EVENTS - taken, timeout=30):
                await m.ack_sync()
                taken += 1
        acked = (await controller.jetstream().consumer_info(EVENTS_STREAM, "sco-exclusion-r1")).ack_floor.stream_seq
        await controller.close()
        watcher_errors: list[str] = []
        watcher = await _connect(stack_nats, "watcher", watcher_errors)
        seen: list[Any] = []

        async def collect(msg: Any) -> None:
            seen.append(msg)

        await watcher.subscribe("sco.events.r1.>", cb=collect)
        await watcher.flush()
        region = await _connect(stack_nats, "region", [])
        for n in range(EVENTS):
            await region.publish(f"sco.events.r1.placed.i-{n}", b"{}")
        await region.close()
        await until(lambda: len(seen) >= EVENTS)
        refused: list[str] = []  # nats-py's ordered consumer: the legacy creation subject no component has
        await _attempt("ordered", watcher.jetstream(timeout=1.0).subscribe(
            "sco.events.r1.>", cb=collect, ordered_consumer=True, stream=EVENTS_STREAM), {})
        await watcher.flush()
        await until(lambda: bool(watcher_errors))
        refused = list(watcher_errors)
        await watcher.close()
        return acked, controller_errors, len(seen), refused

    acked, controller_errors, observed, refused = asyncio.run(scenario())
    assert acked == EVENTS and controller_errors == []
    assert observed == EVENTS
    assert any(f'permissions violation for publish to "$js.api.consumer.create.{EVENTS_STREAM}"'.lower() in e.lower()
               for e in refused), refused
