"""The transactional outbox (ADR-25).

Write events in the same PostgreSQL transaction as the state change, and relay committed rows to JetStream.

The relay publishes each unsent row with ``Nats-Msg-Id`` = ``event_id`` and waits for the stream's
acknowledgement, writes capacity actions (rows with an ``action``) to the ``audit_actions`` sink in
ClickHouse — separately from the telemetry stream — and only then marks the rows sent, in the same
transaction that locked them. A relay killed between publishing and marking sent republishes the rows
when it comes back; JetStream drops them as duplicates (24 h window) and the audit table is keyed on
the action id, so nothing is doubled.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from contracts.events import Event

from . import nats as sco_nats

__all__ = ["AUDIT_COLUMNS", "Relay", "enqueue", "main"]

log = logging.getLogger(__name__)
AUDIT_COLUMNS = ("action_id", "time", "action", "actor", "kind", "region", "partition", "pool", "instance",
                 "workload", "cause", "drill", "payload")
_SELECT = ("SELECT id, event_id, subject, payload, action, actor, sent_at IS NOT NULL FROM outbox "
           "WHERE sent_at IS NULL OR (action IS NOT NULL AND audited_at IS NULL) "
           "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED")


def enqueue(conn: Any, event: Event, *, action: str | None = None, actor: str | None = None) -> None:
    """Add ``event`` to the outbox inside the caller's transaction (a second enqueue of one event is a no-op).

    ``action`` marks a capacity action (launch, terminate, fallback, approval) for the audit sink, with
    ``actor`` the identity that caused it.
    """
    conn.execute("INSERT INTO outbox (event_id, subject, payload, action, actor) VALUES (%s, %s, %s, %s, %s) "
                 "ON CONFLICT (event_id) DO NOTHING",
                 (event.event_id, event.subject, event.to_json(), action, actor))


def _audit_row(payload: bytes, action: str, actor: str | None) -> list[Any]:
    event = Event.from_json(payload)
    row = event.row()
    return [row["event_id"], row["time"], action, actor or "", row["kind"], row["region"], row["partition"],
            row["pool"], row["instance"], row["workload"], row["cause"], row["drill"], payload.decode()]


class Relay:
    """Moves committed outbox rows to JetStream (and actions to the audit sink), then marks them sent.

    ``after_publish`` is called with the published row ids before they are marked sent (a test seam for
    crash-point tests; production leaves it None).
    """

    def __init__(self, conn: Any, js: Any, audit_client: Any, *, batch_size: int = 500,
                 after_publish: Callable[[list[int]], None] | None = None) -> None:
        self.conn, self.js, self.audit = conn, js, audit_client
        self.batch_size = batch_size
        self.after_publish = after_publish
        self.published = 0
        self.duplicates = 0
        self.audited = 0

    async def step(self) -> int:
        """Relay one batch; returns how many rows were settled (0: the outbox is empty)."""
        with self.conn.transaction():
            rows = self.conn.execute(_SELECT, (self.batch_size,)).fetchall()
            if not rows:
                return 0
            unsent = [r for r in rows if not r[6]]
            acks = await asyncio.gather(*(
                sco_nats.publish_raw(self.js, r[2], bytes(r[3]), str(r[1])) for r in unsent))
            self.published += len(acks)
            self.duplicates += sum(1 for a in acks if getattr(a, "duplicate", False))
            if self.after_publish is not None:
                self.after_publish([int(r[0]) for r in unsent])
            actions = [r for r in rows if r[4]]
            if actions:
                audit_rows = [_audit_row(bytes(r[3]), str(r[4]), r[5]) for r in actions]
                await asyncio.to_thread(self.audit.insert, "audit_actions", audit_rows,
                                        column_names=list(AUDIT_COLUMNS))
                self.audited += len(actions)
            self.conn.execute(
                "UPDATE outbox SET sent_at = coalesce(sent_at, now()), attempts = attempts + 1, "
                "audited_at = CASE WHEN action IS NOT NULL THEN now() END WHERE id = ANY(%s)",
                ([int(r[0]) for r in rows],))
        return len(rows)

    async def run(self, stop: asyncio.Event | None = None, *, idle_exit: bool = False,
                  idle_sleep: float = 0.2) -> None:
        """Relay until ``stop`` is set; retry after an error unless ``idle_exit``.

        With ``idle_exit`` it returns once a step settles nothing and raises the first error;
        ``idle_sleep``: seconds between empty polls.
        """
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                settled = await self.step()
            except Exception as exc:  # NATS, ClickHouse or PostgreSQL away: the rows stay unsent
                if idle_exit:
                    raise
                log.warning("%soutbox relay: %s: %s; retrying", _code(exc), type(exc).__name__, exc)
                await asyncio.sleep(1.0)
                continue
            if settled == 0:
                if idle_exit:
                    return
                await asyncio.sleep(idle_sleep)


def _code(exc: BaseException) -> str:
    from .postgres import failure_code

    code = failure_code(exc)
    return f"{code} " if code else ""


async def relay(postgres_url: str | None = None, nats_url: str | None = None, clickhouse_url: str | None = None,
                *, once: bool = False, batch_size: int = 500,
                after_publish: Callable[[list[int]], None] | None = None) -> Relay:
    from .clickhouse import client as ch_client
    from .config import resolve_url
    from .postgres import connect

    nc = await sco_nats.connect(nats_url, name="sco-outbox-relay", component="relay")
    try:
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        # reconnect: after a failover the failed batch is retried on a connection to the new primary
        with connect(postgres_url, autocommit=True, component="relay", reconnect=True) as conn:
            audit = ch_client(resolve_url("clickhouse", clickhouse_url, component="relay"))
            worker = Relay(conn, js, audit, batch_size=batch_size, after_publish=after_publish)
            await worker.run(idle_exit=once)
            return worker
    finally:
        await nc.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m stores.outbox [--postgres URL] [--nats URL] [--clickhouse URL] [--once]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="sco-outbox-relay")
    parser.add_argument("--postgres", default=None)
    parser.add_argument("--nats", default=None)
    parser.add_argument("--clickhouse", default=None)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--once", action="store_true")
    args = parser.parse_args(argv)
    if not logging.getLogger().handlers:  # run as `python -m stores.outbox`; under `sco` the CLI set it up
        from contracts.logsetup import configure

        configure("outbox-relay")
    worker = asyncio.run(relay(args.postgres, args.nats, args.clickhouse, once=args.once, batch_size=args.batch))
    print(json.dumps({"published": worker.published, "duplicates": worker.duplicates, "audited": worker.audited}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
