"""The spend ledger (ADR-23) on PostgreSQL, money as ``numeric``: a fallback launch **reserves** its cost in
the same transaction that checks the 24-hour cap, under a per-workload advisory lock, before any provider call;
the reservation is consumed when the instances exist and released when the launch fails or capacity returns.
Two controllers (or two passes) can never both spend the last euro of a cap.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from ..errors import CapExceeded

__all__ = ["CapExceeded", "committed_24h", "committed_by_workload", "consume", "release", "reserve", "send_committed"]

_WINDOW = timedelta(hours=24)


def committed_24h(conn: Any, workload: str, now: datetime) -> Decimal:
    """Held + consumed reservations made in the 24 hours before ``now``."""
    row = conn.execute(
        "SELECT coalesce(sum(amount_eur), 0) FROM spend_reservations WHERE workload = %s AND state IN "
        "('held', 'consumed') AND window_start > %s", (workload, now - _WINDOW)).fetchone()
    return Decimal(row[0])


def committed_by_workload(conn: Any, now: datetime) -> dict[str, Decimal]:
    """``committed_24h`` of every workload in one query."""
    return send_committed(conn, now)()


def send_committed(conn: Any, now: datetime) -> Callable[[], dict[str, Decimal]]:
    """``committed_by_workload``'s statement sent; the reader of its rows returned (a pass sends its reads
    together: ``reads``)."""
    cur = conn.execute("SELECT workload, sum(amount_eur) FROM spend_reservations WHERE state IN ('held', "
                       "'consumed') AND window_start > %s GROUP BY workload", (now - _WINDOW,))
    return lambda: {r[0]: Decimal(r[1]) for r in cur}


def reserve(conn: Any, workload: str, region: str, amount: Decimal, cap: Decimal, now: datetime,
            approver: str | None = None) -> uuid.UUID:
    """Hold ``amount`` EUR against the workload's cap (plus granted approvals) or raise ``CapExceeded``."""
    rid = uuid.uuid4()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sco-ledger:' || %s))", (workload,))
        granted = conn.execute(
            "SELECT coalesce(sum(granted_eur), 0) FROM approval_requests WHERE workload = %s AND state = 'granted' "
            "AND requested_at > %s", (workload, now - _WINDOW)).fetchone()[0]
        committed = committed_24h(conn, workload, now)
        if committed + amount > cap + Decimal(granted):
            raise CapExceeded(workload, amount, committed, cap + Decimal(granted))
        conn.execute(
            "INSERT INTO spend_reservations (reservation_id, workload, region, amount_eur, window_start, window_end, "
            "approver) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (rid, workload, region, amount, now, now + _WINDOW, approver))
    return rid


def consume(conn: Any, reservation_id: uuid.UUID, workload: str, region: str, instance_ids: list[str], pool: str,
            amount: Decimal, now: datetime) -> None:
    """Mark a spend reservation consumed by the instances it launched, in one transaction."""
    with conn.transaction():
        conn.execute("UPDATE spend_reservations SET state = 'consumed' WHERE reservation_id = %s", (reservation_id,))
        per = (amount / max(len(instance_ids), 1)).quantize(Decimal("0.000001"))
        for iid in instance_ids:
            conn.execute("INSERT INTO spends (spend_id, reservation_id, workload, region, instance_id, pool, "
                         "amount_eur, spent_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                         (uuid.uuid4(), reservation_id, workload, region, iid, pool, per, now))


def release(conn: Any, reservation_id: uuid.UUID) -> None:
    """Release a spend reservation nothing consumed."""
    with conn.transaction():
        conn.execute("UPDATE spend_reservations SET state = 'released' WHERE reservation_id = %s AND state = 'held'",
                     (reservation_id,))
