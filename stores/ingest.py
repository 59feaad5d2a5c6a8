"""The ingest: a durable JetStream pull consumer that batches lifecycle events into ClickHouse.

A batch is acknowledged only after ClickHouse confirmed its insert — the insert's ``X-ClickHouse-Summary``
must report every row and its id written, or ``event_ids`` must hold every row (``stores.eventids``); an HTTP
200 alone is not enough — so a crash at any point redelivers rather than loses; an event whose id was not
recorded before the crash lands twice until the ReplacingMergeTree merges it (read with ``FINAL`` or
``count(DISTINCT event_id)``). A message that is not a valid ``contracts.events.Event``, whose time is outside
the sane window (before 2000-01-01, more than an hour ahead), or that ClickHouse rejects on its own, is
dead-lettered — recorded in ``events_dead_letter`` and published to ``sco.deadletter.events`` (whole, or as
a reference when it would not fit ``max_payload``, see ``stores.deadletter``) — and terminated only after
both are durable, so it never blocks the stream. ClickHouse unreachable: the batch is left unacknowledged
and retried with backoff. NATS closing the connection for good (nats-py never reopens a connection the
server closed): the ingest reconnects with backoff a bounded number of times, then raises
``IngestDisconnected`` and ``main`` exits non-zero for the supervisor — never a silent retry loop.

Run it as ``sco ingest`` (a loop) or call :func:`drain` from a Dagster sensor (one pass, then returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.subjects import EVENTS_STREAM, event_subject_problem

from . import eventids
from . import nats as sco_nats
from .deadletter import DEAD_COLUMNS, DeadLetter, outgoing
from .errors import IngestDisconnected, IngestError, InsertNotConfirmed
from .eventrows import EVENT_COLUMNS, INSERT_FORMAT, encode_rows, parse_events
from .pull import Puller, ack_all
from .startup import clickhouse_client, close_client, process_age, skip_websocket_transport

__all__ = ["CONSUMER", "EVENT_COLUMNS", "Batch", "Ingest", "drain", "run", "split_batch"]

log = logging.getLogger(__name__)
CONSUMER = "sco-ingest"
EVENT_SUBJECT = "sco.events.>"
BACKOFF_S = 0.5  # first pause after a failure; doubled each time, at most MAX_BACKOFF_S
MAX_BACKOFF_S = 10.0
Clock = Callable[[], dt.datetime]


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class Batch:
    """One fetch, split: ClickHouse rows with the messages behind them, and dead letters with reasons."""

    rows: list[list[Any]] = field(default_factory=list)
    good: list[Any] = field(default_factory=list)  # messages behind ``rows``, same order
    dead: list[tuple[Any, str]] = field(default_factory=list)  # (message, reason)
    repeats: list[Any] = field(default_factory=list)  # messages whose row is stored already: acknowledged only


def split_batch(messages: list[Any], now: dt.datetime | None = None) -> Batch:
    """Parse messages into ClickHouse rows; what is not a valid event inside the time window is set aside."""
    parsed = parse_events([bytes(m.data) for m in messages], now or _utcnow())
    batch = Batch(dead=[(messages[i], why) for i, why in parsed.rejected])
    for row, index in zip(parsed.rows, parsed.indexes, strict=True):
        # the body must belong on its subject: an agent's credential publishes only its own instance's subjects
        problem = event_subject_problem(messages[index].subject, row[3], row[1], row[6])
        if problem is None:
            batch.rows.append(row)
            batch.good.append(messages[index])
        else:
            batch.dead.append((messages[index], problem))
    return batch


def _seq(msg: Any) -> int:
    try:
        return int(msg.metadata.sequence.stream)
    except Exception:
        return 0


def _dead_letter_of(msg: Any, reason: str) -> DeadLetter:
    return DeadLetter(subject=msg.subject, sequence=_seq(msg), msg_id=(msg.headers or {}).get("Nats-Msg-Id", ""),
                      data=bytes(msg.data), reason=reason)


_CODE = re.compile(r"Code: (\d+)")
# ClickHouse error codes that describe the server's state, never the rows: the batch is retried, not
# dead-lettered (rows dead-lettered for such an error were acknowledged and missing).
SERVER_STATE_CODES = frozenset({
    60,   # UNKNOWN_TABLE
    81,   # UNKNOWN_DATABASE
    159,  # TIMEOUT_EXCEEDED
    164,  # READONLY
    202,  # TOO_MANY_SIMULTANEOUS_QUERIES
    209, 210,  # SOCKET_TIMEOUT, NETWORK_ERROR
    236,  # ABORTED
    241,  # MEMORY_LIMIT_EXCEEDED
    242,  # TABLE_IS_READ_ONLY
    252,  # TOO_MANY_PARTS
    373,  # SESSION_IS_LOCKED
    394,  # QUERY_WAS_CANCELLED
    425,  # SYSTEM_ERROR
    497,  # ACCESS_DENIED
    516,  # AUTHENTICATION_FAILED
})


def refuses_the_data(exc: Exception) -> bool:
    """Whether a ClickHouse error is about the rows sent (dead-letter them) rather than the server (retry).

    Only an error with a ClickHouse code outside ``SERVER_STATE_CODES`` blames the data; an error without a
    code (a proxy's 502, a garbled answer) is the server's.
    """
    match = _CODE.search(str(exc))
    return match is not None and int(match.group(1)) not in SERVER_STATE_CODES


class Ingest:
    """One consumer loop. ``client`` is a clickhouse-connect client; ``js`` a JetStream context."""

    def __init__(self, js: Any, client: Any, *, batch_size: int = 2000, fetch_timeout: float = 1.0,
                 durable: str = CONSUMER, ack_wait_s: float = 60.0, clock: Clock = _utcnow) -> None:
        self.js, self.client = js, client
        self.batch_size, self.fetch_timeout, self.durable = batch_size, fetch_timeout, durable
        self.ack_wait_s, self.clock = ack_wait_s, clock
        self._sub: Any = None
        self._puller: Puller
        self.inserted = 0
        self.dead_lettered = 0
        self.failures = 0  # consecutive failed steps (the backoff exponent)

    @property
    def nc(self) -> Any:
        """The NATS connection under ``js``."""
        return self.js._nc

    async def start(self) -> None:
        """Ensure the event and dead-letter streams and bind the durable pull consumer."""
        try:
            await self._start()
        except Exception as exc:
            if self.nc.is_closed:
                raise IngestDisconnected(f"the NATS connection is closed ({type(exc).__name__}: {exc}); "
                                         "reconnect or restart the ingest") from exc
            raise

    async def _start(self) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        await sco_nats.ensure_events_stream(self.js)
        await sco_nats.ensure_deadletter_stream(self.js)
        config = ConsumerConfig(durable_name=self.durable, ack_policy=AckPolicy.EXPLICIT,
                                deliver_policy=DeliverPolicy.ALL, ack_wait=self.ack_wait_s,
                                max_ack_pending=50_000)
        self._sub = await self.js.pull_subscribe(EVENT_SUBJECT, durable=self.durable, stream=EVENTS_STREAM,
                                                 config=config)  # creates or binds the durable consumer
        await self._sub.unsubscribe()  # the fetches go through ``Puller``, not nats-py's fetch
        self._puller = Puller(self.nc, EVENTS_STREAM, self.durable)
        await self._puller.bind()

    async def _fetch(self) -> list[Any]:
        return await self._puller.fetch(self.batch_size, self.fetch_timeout)

    async def _settle(self, messages: list[Any], batch: Batch | None = None, stored: asyncio.Event | None = None
                      ) -> int:
        """Insert, dead-letter and acknowledge one batch; on failure nak it for a prompt redelivery.

        ``batch``: ``messages`` split already (``run`` validates the next batch while the previous is inserted);
        ``stored``: set when the insert and the dead letters are over, done or failed (``run`` then starts the
        next insert while this batch is acknowledged).
        """
        try:
            batch = batch or split_batch(messages, self.clock())
            if batch.rows:
                await asyncio.to_thread(self._insert_rows, batch)
            if batch.dead:
                await self._dead_letter(batch.dead)
        except BaseException:
            with contextlib.suppress(Exception):
                for msg in messages:
                    await msg.nak(delay=1)
            raise
        finally:
            if stored is not None:
                stored.set()
        await ack_all(self.nc, [*batch.good, *batch.repeats])
        for msg, _ in batch.dead:
            await msg.term()
        await self.nc.flush(timeout=5)
        if not self.inserted and batch.good:
            log.info("ingest: first batch stored and acknowledged (%d events)", len(batch.good))
        self.inserted += len(batch.good)
        self.dead_lettered += len(batch.dead)
        return len(messages)

    async def step(self) -> int:
        """Fetch, insert and acknowledge one batch; the number of messages settled (0: nothing waiting)."""
        messages = await self._fetch()
        return await self._settle(messages) if messages else 0

    def _insert(self, rows: list[list[Any]]) -> int | None:
        """One insert: the rows whose ids are not stored yet go into ``events`` (``stores.eventids``).

        The rows travel as one ``JSONCompactColumns`` body that ClickHouse parses in C++ (``stores.eventrows``):
        no Native serialisation in Python, no datetime objects. Returns the rows ClickHouse reports written,
        ``None`` when it does not say. clickhouse-connect may resend it on a dropped connection: the ids the
        first attempt stored are then skipped.
        """
        return eventids.insert_new(self.client, rows)

    def _insert_rows(self, batch: Batch) -> None:
        """Store the batch's rows once per event id (``stores.eventids``), in one request when all are new.

        The first row of each id is sent; when ClickHouse reports every one of them and its id written, the
        batch is done. Otherwise each row is compared with what ``event_ids`` holds: stored with the same digest
        (now or before) is acknowledged, with another dead-lettered, not stored at all fails the batch — it is
        acknowledged only when ClickHouse holds every row (``InsertNotConfirmed``, the batch comes back).
        """
        rows, msgs = batch.rows, batch.good
        found = eventids.by_id(rows)
        sent = Batch(rows=[rows[i] for i in found.first], good=[msgs[i] for i in found.first])
        written = self._insert_checked(sent)
        batch.dead += sent.dead
        refused = {id(msg): why for msg, why in sent.dead}
        batch.rows, batch.good = [], []
        if written == eventids.WRITES * len(sent.rows) and not found.other:  # each first row stored, its id too
            batch.rows, batch.good = sent.rows, sent.good
            stored = {id(msg) for msg in sent.good}
        else:
            stored = self._compare(batch, sent, written, [(rows[i], msgs[i]) for i, _ in found.other])
        for index, first in found.same:  # the same row again: as its first fared
            if id(msgs[first]) in refused:
                batch.dead.append((msgs[index], refused[id(msgs[first])]))
            elif id(msgs[first]) in stored:
                batch.repeats.append(msgs[index])
            else:
                self._conflict(batch, msgs[index], rows[index])

    def _compare(self, batch: Batch, sent: Batch, written: int | None, others: list[tuple[list[Any], Any]]
                 ) -> set[int]:
        """Sort the sent rows and the batch's other rows under their ids by what ``event_ids`` holds.

        Fills ``batch`` (stored, repeats, conflicts) and returns the ``id()`` of the sent messages stored.
        """
        verdicts = eventids.stored_as(self.client, [*sent.rows, *(row for row, _ in others)])
        mine, theirs = verdicts[: len(sent.rows)], verdicts[len(sent.rows):]
        missing = mine.count(None)
        if missing:
            raise InsertNotConfirmed(f"ClickHouse confirmed {len(mine) - missing} of {len(mine)} rows inserted into "
                                     "events; the batch is not acknowledged and comes back (check the server's log)")
        # how many of the rows stored with their own digest are new is what ClickHouse wrote; which, it does not say
        new = len(sent.rows) if written is None else (written - len(sent.rows)) // (eventids.WRITES - 1)
        stored: set[int] = set()
        for row, msg, same in zip(sent.rows, sent.good, mine, strict=True):
            if not same:
                self._conflict(batch, msg, row)
                continue
            stored.add(id(msg))
            if len(batch.rows) < new:
                batch.rows.append(row)
                batch.good.append(msg)
            else:
                batch.repeats.append(msg)
        for (row, msg), same in zip(others, theirs, strict=True):
            if same:
                batch.repeats.append(msg)
            else:  # stored with another digest, or not at all: it differs from its id's first row in the batch
                self._conflict(batch, msg, row)
        return stored

    @staticmethod
    def _conflict(batch: Batch, msg: Any, row: list[Any]) -> None:
        batch.dead.append((msg, f"{eventids.CONFLICT}: {row[0]} is stored with other content"))

    def _insert_checked(self, batch: Batch) -> int | None:
        """Insert ``batch``'s rows; the rows ClickHouse reports written (``None``: not said).

        When ClickHouse refuses the batch's data, the rows go one by one and those it refuses move to
        ``batch.dead``.
        """
        from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

        if not batch.rows:
            return 0
        try:
            return self._insert(batch.rows)
        except OperationalError:
            raise  # ClickHouse unreachable: nothing is acknowledged, the batch comes back
        except DatabaseError as exc:
            if not refuses_the_data(exc):
                raise  # the server's state (missing table, read-only, memory…), not the rows: retry later
        # ClickHouse refused the batch's data: insert one by one and dead-letter the rows it refuses.
        keep_rows, keep_msgs = [], []
        written: int | None = 0
        for row, msg in zip(batch.rows, batch.good, strict=True):
            try:
                one = self._insert([row])
            except OperationalError:
                raise
            except DatabaseError as row_exc:
                if not refuses_the_data(row_exc):
                    raise
                batch.dead.append((msg, f"rejected by ClickHouse: {str(row_exc).splitlines()[0][:300]}"))
                continue
            written = None if written is None or one is None else written + one
            keep_rows.append(row)
            keep_msgs.append(msg)
        batch.rows, batch.good = keep_rows, keep_msgs
        return written

    async def _dead_letter(self, dead: list[tuple[Any, str]]) -> None:
        """Record, then publish (whole or as a reference) every dead letter; both durable before any term."""
        letters = [_dead_letter_of(msg, reason) for msg, reason in dead]
        now = self.clock()
        rows = [letter.row(now) for letter in letters]
        await asyncio.to_thread(self.client.raw_insert, "events_dead_letter", DEAD_COLUMNS, encode_rows(rows),
                                fmt=INSERT_FORMAT)
        max_payload = int(getattr(self.nc, "max_payload", 0) or 1024 * 1024)
        for letter in letters:
            out = outgoing(letter, max_payload)
            await self.js.publish(out.subject, out.payload, headers=out.headers, timeout=5)  # PubAck: durable
            log.warning("dead-lettered %s seq %s%s: %s", letter.subject, letter.sequence,
                        " (as a reference: too large to copy)" if out.reference else "", letter.reason)

    async def run(self, stop: asyncio.Event | None = None, idle_exit: bool = False) -> None:
        """Loop until ``stop`` is set (or, with ``idle_exit``, until a fetch finds nothing).

        Pipelined: the next batch is fetched and validated while the previous one is inserted, and inserted while
        the one before is acknowledged (inserts stay one at a time, in order: a batch's ids are compared with what
        the previous batches stored). Raises ``IngestDisconnected`` as soon as the NATS connection is closed for
        good.
        """
        stop = stop or asyncio.Event()
        pending: asyncio.Task[int] | None = None  # the batch being inserted (then acknowledged)
        stored = asyncio.Event()  # set when its insert is over
        acking: asyncio.Task[int] | None = None  # the batch before it: inserted, being acknowledged
        try:
            while not stop.is_set():
                messages: list[Any] = []
                try:
                    messages = await self._fetch()
                except Exception as exc:
                    await self._retry(exc)
                batch = None
                if messages and pending is not None:  # validated while the previous batch's insert runs in its thread
                    with contextlib.suppress(Exception):  # _settle splits it again and naks it on the error
                        batch = split_batch(messages, self.clock())
                if pending is not None:
                    await stored.wait()
                    if acking is not None:  # one acknowledgement on its way at most
                        await self._settled(acking)
                    acking, pending = pending, None
                    if acking.done():  # its insert failed: back off before the next one
                        await self._settled(acking)
                        acking = None
                if messages:
                    stored = asyncio.Event()
                    pending = asyncio.create_task(self._settle(messages, batch, stored))
                    continue
                if acking is not None:
                    await self._settled(acking)
                    acking = None
                if idle_exit and await self._idle():
                    return
            for task in (acking, pending):
                if task is not None:
                    await task
        finally:
            for task in (pending, acking):
                if task is not None and not task.done():
                    task.cancel()  # leaving on an error: its messages stay unacknowledged and come back

    async def _settled(self, task: asyncio.Task[int]) -> None:
        """Wait for a batch's settling; its failure is retried as any (backoff), or raised when it must be."""
        try:
            await task
            self.failures = 0
        except Exception as exc:
            await self._retry(exc)

    async def _idle(self) -> bool:
        """Nothing left for this consumer: an empty fetch alone may be a slow one on a loaded machine."""
        if self._puller.waiting():
            return False
        try:
            info = await self.js.consumer_info(EVENTS_STREAM, self.durable)
        except Exception as exc:
            await self._retry(exc)
            return False
        return int(info.num_pending) == 0

    async def _retry(self, exc: Exception) -> None:
        """Stores away (NATS reconnecting, ClickHouse down): log, back off, go on. Closed for good: raise."""
        from clickhouse_connect.driver.exceptions import OperationalError

        if self.nc.is_closed:
            raise IngestDisconnected(f"the NATS connection is closed ({type(exc).__name__}: {exc}); "
                                     "nats-py does not reopen it — reconnect or restart the ingest") from exc
        from clickhouse_connect.driver.exceptions import DatabaseError

        transient = (OperationalError, DatabaseError, ConnectionError, OSError, InsertNotConfirmed)
        if isinstance(exc, transient) or type(exc).__module__.startswith("nats"):
            self.failures += 1
            delay = min(BACKOFF_S * 2 ** (self.failures - 1), MAX_BACKOFF_S)
            log.warning("ingest: %s: %s; retrying in %.1f s", type(exc).__name__, exc, delay)
            await asyncio.sleep(delay)
            return
        raise exc


async def run(nats_url: str | None = None, clickhouse_url: str | None = None, *, batch_size: int = 2000,
              stop: asyncio.Event | None = None, idle_exit: bool = False, ack_wait_s: float = 60.0,
              max_reconnects: int = 5) -> Ingest:
    """Run the event ingest from JetStream into ClickHouse until ``stop`` (or until idle with ``idle_exit``).

    Waits for ClickHouse when it is down at start. ``ack_wait_s``: seconds before an unacknowledged
    batch is redelivered. A NATS connection closed for good is reopened with backoff up to
    ``max_reconnects`` times in a row without progress, then ``IngestDisconnected`` is raised.
    Returns the ingest, whose counters say what it did.
    """
    # The ClickHouse client (an import and a round trip) is made while NATS connects and binds: a restarted
    # ingest's start-up is a chain of such steps, each stretched by the machine's load.
    pending_client = asyncio.ensure_future(clickhouse_client(clickhouse_url))
    client: Any = None
    inserted = dead = attempts = 0
    try:
        while True:
            nc = await sco_nats.connect(nats_url, name="sco-ingest", component="ingest")
            ingest = Ingest(nc.jetstream(), client, batch_size=batch_size, ack_wait_s=ack_wait_s)
            try:
                await ingest.start()
                if client is None:
                    client = ingest.client = await pending_client
                log.info("ingest: consumer %s bound, pulling", ingest.durable)
                await ingest.run(stop, idle_exit=idle_exit)
                ingest.inserted, ingest.dead_lettered = ingest.inserted + inserted, ingest.dead_lettered + dead
                return ingest
            except IngestDisconnected:
                attempts = 1 if ingest.inserted or ingest.dead_lettered else attempts + 1
                inserted, dead = inserted + ingest.inserted, dead + ingest.dead_lettered
                if attempts > max_reconnects:
                    raise
                log.warning("ingest: NATS closed the connection; reconnecting (attempt %d of %d)", attempts,
                            max_reconnects)
                await asyncio.sleep(min(BACKOFF_S * 2 ** (attempts - 1), MAX_BACKOFF_S))
            finally:
                with contextlib.suppress(Exception):
                    await nc.close()
    finally:
        await close_client(pending_client)


def drain(nats_url: str | None = None, clickhouse_url: str | None = None, *, batch_size: int = 2000) -> int:
    """One pass for a Dagster sensor: ingest what is waiting, return how many events were inserted."""
    ingest = asyncio.run(run(nats_url, clickhouse_url, batch_size=batch_size, idle_exit=True))
    return ingest.inserted


def main(argv: list[str] | None = None) -> int:
    """``python -m stores.ingest [--nats URL] [--clickhouse URL] [--batch N] [--once]``; 3 on ``IngestError``."""
    import argparse

    parser = argparse.ArgumentParser(prog="sco-ingest")
    parser.add_argument("--nats", default=None)
    parser.add_argument("--clickhouse", default=None)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--ack-wait", type=float, default=60.0, help="seconds before an unacked batch is resent")
    args = parser.parse_args(argv)
    skip_websocket_transport(args.nats)
    if not logging.getLogger().handlers:  # run as `python -m stores.ingest`; under `sco` the CLI set it up
        from contracts.logsetup import configure

        configure("ingest")
    log.info("ingest: started, %s after the process did (Python start-up and imports)", process_age())
    try:
        ingest = asyncio.run(run(args.nats, args.clickhouse, batch_size=args.batch, idle_exit=args.once,
                                 ack_wait_s=args.ack_wait))
    except IngestError as exc:
        print(f"sco-ingest: {exc}")
        return 3
    print(f"inserted {ingest.inserted} events, dead-lettered {ingest.dead_lettered}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
