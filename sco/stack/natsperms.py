"""Who may touch which JetStream consumer: the subjects of the JetStream API and of acknowledgements, per
consumer, that ``sco.stack.credentials.NATS_PERMISSIONS`` allows one user and denies every other.

A durable consumer is a component's bookmark in the event stream: whoever may fetch from it, acknowledge its
messages or delete it decides what the owner ever sees. nats-server checks a consumer's operations as publishes
to subjects that name the stream and the consumer (``$JS.API.CONSUMER.<OP>.<stream>.<consumer>``,
``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>``, ``$JS.ACK.<stream>.<consumer>.…``), so a publish allow-list
per consumer name is the whole of the rule. Consumer names cannot hold a dot, so a prefix such as
``sco-exclusion-`` cannot be a wildcard: the controller's exclusion watchers (one durable per region, named
by region) get every consumer name *except* the ones another component owns (``OWNED_CONSUMERS``; a deny
wins over an allow in nats-server).

The legacy creation subject ``$JS.API.CONSUMER.CREATE.<stream>`` (no name in the subject; nats-py's ordered
consumer uses it) is allowed to no component: nats-server takes the name from the request's body there, so a
credential allowed it could create-or-update any consumer by name — refilter ``sco-ingest`` to nothing — and no
subject permission could tell. Read-only observers (``watcher``: ``sco drill``, the demo's display) use core
subscriptions and get no consumer at all.
"""

from __future__ import annotations

__all__ = ["EVENTS_STREAM", "INGEST_CONSUMER", "OWNED_CONSUMERS", "consumer_subjects", "foreign_consumer_denies"]

EVENTS_STREAM = "SCO_EVENTS"        # stores.nats.EVENTS_STREAM (a test holds them equal)
INGEST_CONSUMER = "sco-ingest"      # stores.ingest.CONSUMER (likewise)
# user -> the durable consumers only it may bind, fetch from, acknowledge or delete
OWNED_CONSUMERS: dict[str, tuple[str, ...]] = {"ingest": (INGEST_CONSUMER,)}


def _acks(stream: str, consumer: str) -> list[str]:
    # v1 acknowledgement subjects, and v2 (domain and account hash first) for servers that send those
    return [f"$JS.ACK.{stream}.{consumer}.>", f"$JS.ACK.*.*.{stream}.{consumer}.>"]


def consumer_subjects(stream: str, consumer: str) -> list[str]:
    """What the user of a pull consumer publishes: look it up, create or bind it (every creation subject, the
    filtered form included), fetch, acknowledge, and delete it. ``consumer`` ``*``: any name."""
    api = "$JS.API.CONSUMER"
    return [f"{api}.INFO.{stream}.{consumer}", f"{api}.CREATE.{stream}.{consumer}",
            f"{api}.CREATE.{stream}.{consumer}.>", f"{api}.DURABLE.CREATE.{stream}.{consumer}",
            f"{api}.MSG.NEXT.{stream}.{consumer}", f"{api}.DELETE.{stream}.{consumer}", *_acks(stream, consumer)]


def foreign_consumer_denies(user: str, stream: str = EVENTS_STREAM) -> list[str]:
    """Every operation on a consumer another user owns, as publish denies for ``user`` (one- and two-token
    operations, with and without a filter subject after the name, and its acknowledgements and flow control)."""
    out: list[str] = []
    for owner, names in sorted(OWNED_CONSUMERS.items()):
        if owner == user:
            continue
        for name in names:
            out += [f"$JS.API.CONSUMER.*.{stream}.{name}", f"$JS.API.CONSUMER.*.{stream}.{name}.>",
                    f"$JS.API.CONSUMER.*.*.{stream}.{name}", f"$JS.API.CONSUMER.*.*.{stream}.{name}.>",
                    *_acks(stream, name), f"$JS.FC.{stream}.{name}.>"]
    return out

