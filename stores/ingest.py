"""The ingest: a durable JetStream pull consumer that batches lifecycle events into ClickHouse.

A batch is acknowledged only after ClickHouse accepted its insert, so a crash at any point redelivers
rather than loses; a redelivered event lands twice until the ReplacingMergeTree merges it (read with
``FINAL`` or ``count(DISTINCT event_id)``). A message that does not parse as a ``contracts.events.Event``,
or that ClickHouse rejects on its own, is dead-lettered — published to ``sco.deadletter.events`` and
recorded in ``events_dead_letter`` with the reason — and acknowledged, so it never blocks the stream.
When ClickHouse is unreachable the batch is left unacknowledged and retried.

Run it as ``sco ingest`` (a loop) or call :func:`drain` from a Dagster sensor (one pass, then returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

from contracts.events import Event
from contracts.subjects import EVENTS_STREAM

from . import nats as sco_nats

__all__ = ["CONSUMER", "EVENT_COLUMNS", "Batch", "Ingest", "drain", "run", "split_batch"]

log = logging.getLogger(__name__)
CONSUMER = "sco-ingest"
EVENT_COLUMNS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                 "contract_version", "cause", "drill", "source", "attributes")
DEAD_COLUMNS = ("received_at", "subject", "stream_seq", "msg_id", "reason", "payload")


@dataclass
class Batch:
    """One fetch, split: ClickHouse rows with the messages behind them, and dead letters with reasons."""

    rows: list[list[Any]] = field(default_factory=list)
    good: list[Any] = field(default_factory=list)  # messages behind ``rows``, same order
    dead: list[tuple[Any, str]] = field(default_factory=list)  # (message, reason)


def split_batch(messages: list[Any]) -> Batch:
    """Parse messages into ClickHouse rows; what does not parse is set aside with the reason."""
    batch = Batch()
    for msg in messages:
        try:
            row = Event.from_json(msg.data).row()
        except ValueError as exc:  # pydantic.ValidationError and JSON errors are ValueErrors
            batch.dead.append((msg, f"not a valid event: {_reason(exc)}"))
            continue
        batch.rows.append([row[c] for c in EVENT_COLUMNS])
        batch.good.append(msg)
    return batch


def _reason(exc: ValueError) -> str:
    """``field: problem; …`` for a validation error, the first line otherwise."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0][:300]
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg', '')}" for e in errors()]
    return "; ".join(parts)[:500]


def _seq(msg: Any) -> int:
    try:
        return int(msg.metadata.sequence.stream)
    except Exception:
        return 0


class Ingest:
    """One consumer loop. ``client`` is a clickhouse-connect client; ``js`` a JetStream context."""

    def __init__(self, js: Any, client: Any, *, batch_size: int = 2000, fetch_timeout: float = 1.0,
                 durable: str = CONSUMER, ack_wait_s: float = 60.0) -> None:
        self.js, self.client = js, client
        self.batch_size, self.fetch_timeout, self.durable = batch_size, fetch_timeout, durable
        self.ack_wait_s = ack_wait_s
        self._sub: Any = None
        self.inserted = 0
        self.dead_lettered = 0

    async def start(self) -> None:
        """Ensure the event and dead-letter streams and bind the durable pull consumer."""
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        await sco_nats.ensure_events_stream(self.js)
        await sco_nats.ensure_deadletter_stream(self.js)
        config = ConsumerConfig(durable_name=self.durable, ack_policy=AckPolicy.EXPLICIT,
                                deliver_policy=DeliverPolicy.ALL, ack_wait=self.ack_wait_s,
                                max_ack_pending=50_000)
        self._sub = await self.js.pull_subscribe(EVENT_SUBJECT, durable=self.durable, stream=EVENTS_STREAM,
                                                 config=config)

    async def _fetch(self) -> list[Any]:
        import nats.errors

        try:
            messages: list[Any] = await self._sub.fetch(self.batch_size, timeout=self.fetch_timeout)
        except (TimeoutError, nats.errors.TimeoutError):
            return []
        return messages

    async def _settle(self, messages: list[Any]) -> int:
        """Insert, dead-letter and acknowledge one batch; on failure nak it for a prompt redelivery."""
        try:
            batch = split_batch(messages)
            if batch.rows:
                await asyncio.to_thread(self._insert_rows, batch)
            if batch.dead:
                await self._dead_letter(batch.dead)
        except BaseException:
            with contextlib.suppress(Exception):
                for msg in messages:
                    await msg.nak(delay=1)
            raise
        for msg in batch.good:
            await msg.ack()
        for msg, _ in batch.dead:
            await msg.term()
        await self.js._nc.flush(timeout=5)
        self.inserted += len(batch.good)
        self.dead_lettered += len(batch.dead)
        return len(messages)

    async def step(self) -> int:
        """Fetch, insert and acknowledge one batch; the number of messages settled (0: nothing waiting)."""
        messages = await self._fetch()
        return await self._settle(messages) if messages else 0

    def _insert_rows(self, batch: Batch) -> None:
        from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

        try:
            self.client.insert("events", batch.rows, column_names=list(EVENT_COLUMNS))
        except OperationalError:
            raise  # ClickHouse unreachable: nothing is acknowledged, the batch comes back
        except DatabaseError:
            # ClickHouse refused the batch: insert one by one and dead-letter the rows it refuses.
            keep_rows, keep_msgs = [], []
            for row, msg in zip(batch.rows, batch.good, strict=True):
                try:
                    self.client.insert("events", [row], column_names=list(EVENT_COLUMNS))
                except OperationalError:
                    raise
                except DatabaseError as exc:
                    batch.dead.append((msg, f"rejected by ClickHouse: {str(exc).splitlines()[0][:300]}"))
                    continue
                keep_rows.append(row)
                keep_msgs.append(msg)
            batch.rows, batch.good = keep_rows, keep_msgs

    async def _dead_letter(self, dead: list[tuple[Any, str]]) -> None:
        now = dt.datetime.now(dt.UTC)
        rows = [[now, msg.subject, _seq(msg), (msg.headers or {}).get("Nats-Msg-Id", ""), reason,
                 bytes(msg.data).decode("utf-8", "backslashreplace")] for msg, reason in dead]
        await asyncio.to_thread(self.client.insert, "events_dead_letter", rows, column_names=list(DEAD_COLUMNS))
        for msg, reason in dead:
            headers = {sco_nats.REASON_HEADER: reason.replace("\n", " ")[:1000], "Sco-Original-Subject": msg.subject,
                       "Sco-Stream-Seq": str(_seq(msg)), "Nats-Msg-Id": f"dlq-{_seq(msg)}"}
            await self.js.publish(f"{sco_nats.DEADLETTER_PREFIX}.events", msg.data, headers=headers, timeout=5)
        for msg, reason in dead:
            log.warning("dead-lettered %s seq %s: %s", msg.subject, _seq(msg), reason)

    async def run(self, stop: asyncio.Event | None = None, idle_exit: bool = False) -> None:
        """Loop until ``stop`` is set (or, with ``idle_exit``, until a fetch finds nothing).

        Pipelined: the next batch is fetched while the previous one is inserted and acknowledged.
        """
        stop = stop or asyncio.Event()
        pending: asyncio.Task[int] | None = None
        while not stop.is_set():
            messages: list[Any] = []
            try:
                messages = await self._fetch()
            except Exception as exc:
                await self._retry(exc)
            if pending is not None:
                try:
                    await pending
                except Exception as exc:
                    await self._retry(exc)
                pending = None
            if messages:
                pending = asyncio.create_task(self._settle(messages))
            elif idle_exit:
                return
        if pending is not None:
            await pending

    @staticmethod
    async def _retry(exc: Exception) -> None:
        """Stores away (NATS reconnecting, ClickHouse down): log, pause, go on. Anything else is a bug."""
        from clickhouse_connect.driver.exceptions import OperationalError

        if isinstance(exc, OperationalError | ConnectionError | OSError) or type(exc).__module__.startswith("nats"):
            log.warning("ingest: %s: %s; retrying", type(exc).__name__, exc)
            await asyncio.sleep(0.5)
            return
        raise exc


EVENT_SUBJECT = "sco.events.>"


async def run(nats_url: str | None = None, clickhouse_url: str | None = None, *, batch_size: int = 2000,
              stop: asyncio.Event | None = None, idle_exit: bool = False, ack_wait_s: float = 60.0) -> Ingest:
    """Run the event ingest from JetStream into ClickHouse until ``stop`` (or until idle with ``idle_exit``).

    Waits for ClickHouse when it is down at start. ``ack_wait_s``: seconds before an unacknowledged
    batch is redelivered. Returns the ingest, whose counters say what it did.
    """
    from clickhouse_connect.driver.exceptions import OperationalError

    from .clickhouse import client as ch_client

    nc = await sco_nats.connect(nats_url, name="sco-ingest")
    try:
        client = None
        while client is None:  # ClickHouse may be down when the ingest starts: wait for it, do not exit
            try:
                client = await asyncio.to_thread(ch_client, clickhouse_url)
            except OperationalError as exc:
                log.warning("ingest: ClickHouse unreachable (%s); retrying", exc)
                await asyncio.sleep(1.0)
        ingest = Ingest(nc.jetstream(), client, batch_size=batch_size, ack_wait_s=ack_wait_s)
        await ingest.start()
        await ingest.run(stop, idle_exit=idle_exit)
        return ingest
    finally:
        await nc.close()


def drain(nats_url: str | None = None, clickhouse_url: str | None = None, *, batch_size: int = 2000) -> int:
    """One pass for a Dagster sensor: ingest what is waiting, return how many events were inserted."""
    ingest = asyncio.run(run(nats_url, clickhouse_url, batch_size=batch_size, idle_exit=True))
    return ingest.inserted


def main(argv: list[str] | None = None) -> int:
    """``python -m stores.ingest [--nats URL] [--clickhouse URL] [--batch N] [--once]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="sco-ingest")
    parser.add_argument("--nats", default=None)
    parser.add_argument("--clickhouse", default=None)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--ack-wait", type=float, default=60.0, help="seconds before an unacked batch is resent")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    ingest = asyncio.run(run(args.nats, args.clickhouse, batch_size=args.batch, idle_exit=args.once,
                             ack_wait_s=args.ack_wait))
    print(f"inserted {ingest.inserted} events, dead-lettered {ingest.dead_lettered}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
