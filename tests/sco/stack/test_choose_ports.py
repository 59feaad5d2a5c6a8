"""Which port a server starts on: its recorded one when free, else a fresh one (never the same port twice)."""

from __future__ import annotations

from sco.stack.services import choose_ports


def test_a_recorded_port_is_reused_when_free_and_replaced_when_taken_or_external() -> None:
    records = {"postgres": {"managed": True, "port": 5001}, "nats": {"managed": True, "port": 5002},
               "clickhouse": {"managed": False, "url": "http://elsewhere:8123", "port": 5003}}
    got = choose_ports(["postgres", "nats", "clickhouse"], records, [7001, 7002, 7003], lambda p: p != 5002)
    assert got == [5001, 7002, 7003]


def test_a_store_never_recorded_gets_a_fresh_port_and_two_stores_never_share_one() -> None:
    records = {"postgres": {"managed": True, "port": 5001}, "nats": {"managed": True, "port": 5001}}
    assert choose_ports(["postgres", "nats", "clickhouse"], records, [7001, 7002, 7003], lambda p: True) == [
        5001, 7002, 7003]
