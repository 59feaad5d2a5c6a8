"""One leader per partition (ADR-10): a lease row in ``partition_leases`` with an expiry. A holder renews it
each pass; another process takes it only once it has expired, bumping the fencing ``generation``. Only the
holder acts; the others stay standby and keep trying."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .pgbatch import commit

__all__ = ["Lease", "acquire", "release"]


@dataclass(frozen=True)
class Lease:
    holder: str
    generation: int
    until: datetime


def acquire(conn: Any, region: str, partition: str, holder: str, now: datetime,
            ttl: timedelta = timedelta(seconds=15)) -> Lease | None:
    """Take or renew the lease; ``None`` when another holder's lease is still valid."""
    # one statement: atomic without a transaction block; in a pipeline committed at once, in the round trip that
    # brings its row back (``pgbatch``)
    cur = conn.execute(
        "INSERT INTO partition_leases AS l (region, partition, holder, generation, lease_until) "
        "VALUES (%s, %s, %s, 1, %s) ON CONFLICT (region, partition) DO UPDATE SET "
        "holder = excluded.holder, lease_until = excluded.lease_until, "
        "generation = CASE WHEN l.holder = excluded.holder THEN l.generation ELSE l.generation + 1 END "
        "WHERE l.holder = excluded.holder OR l.lease_until < %s "
        "RETURNING holder, generation, lease_until",
        (region, partition, holder, now + ttl, now))
    commit(conn)
    row = cur.fetchone()
    if row is None:
        return None
    return Lease(row[0], int(row[1]), row[2])


def release(conn: Any, region: str, partition: str, holder: str) -> None:
    """Give up the partition's lease held by ``holder`` (it lapses at once)."""
    conn.execute("UPDATE partition_leases SET lease_until = now() - interval '1 second' "
                 "WHERE region = %s AND partition = %s AND holder = %s", (region, partition, holder))
