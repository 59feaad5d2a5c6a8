"""The spend ledger on PostgreSQL: reservations against the 24-hour cap are serialised per workload, so two
controllers (or passes) racing for the last euro of a cap cannot both win; granted approvals raise the cap."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from decimal import Decimal

import psycopg

from controllers.controller import ledger
from testkit.builders import T0


def test_two_racing_reservations_cannot_both_spend_the_last_of_a_cap(pg_migrated_url: str) -> None:
    conns = [psycopg.connect(pg_migrated_url, autocommit=True) for _ in range(8)]
    ledger.reserve(conns[0], "w", "r1", Decimal("70"), Decimal("100"), T0)
    won: list[uuid.UUID] = []
    lost: list[ledger.CapExceeded] = []
    barrier = threading.Barrier(len(conns))

    def attempt(conn: psycopg.Connection) -> None:
        barrier.wait()
        try:
            won.append(ledger.reserve(conn, "w", "r1", Decimal("20"), Decimal("100"), T0 + timedelta(seconds=1)))
        except ledger.CapExceeded as exc:
            lost.append(exc)

    threads = [threading.Thread(target=attempt, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == len(conns) - 1
    assert ledger.committed_24h(conns[0], "w", T0 + timedelta(seconds=2)) == Decimal("90")
    assert "24 h spend cap of 100" in str(lost[0])
    ledger.release(conns[0], won[0])
    assert ledger.committed_24h(conns[0], "w", T0 + timedelta(seconds=2)) == Decimal("70")
    assert ledger.committed_24h(conns[0], "w", T0 + timedelta(hours=25)) == Decimal("0")  # the window moved on
    for c in conns:
        c.close()


def test_a_granted_approval_raises_the_authority(pg_migrated_url: str) -> None:
    conn = psycopg.connect(pg_migrated_url, autocommit=True)
    ledger.reserve(conn, "w", "r1", Decimal("100"), Decimal("100"), T0)
    conn.execute("INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, state, "
                 "granted_eur) VALUES (%s, 'w', 'r1', 'cfo@example.org', %s, 'granted', 50)", (uuid.uuid4(), T0))
    ledger.reserve(conn, "w", "r1", Decimal("50"), Decimal("100"), T0 + timedelta(minutes=1))
    assert ledger.committed_24h(conn, "w", T0 + timedelta(minutes=2)) == Decimal("150")
    conn.close()
