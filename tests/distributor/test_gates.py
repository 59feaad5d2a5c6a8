"""The rollout's gate figures: the ClickHouse adapter over the real ``events`` table (``sco clickhouse serve``)
counts exactly what the test double counts, per partition and half-open window, each event once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.events import Event
from distributor import ClickHouseGates, GateFigures
from stores import clickhouse
from stores.eventrows import EVENT_COLUMNS, INSERT_FORMAT, encode_rows, row_of
from tests.doubles.gates import RecordedGates

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
KINDS = ["bundle-refused", "drained", "overrun", "overrun", "shortfall", "contract-breach", "lost",
         "no-notice-loss", "notice", "launched", "drained"]


def _events() -> list[Event]:
    out = []
    for i, kind in enumerate(KINDS * 3):
        partition = "r1/slurm-hpc" if i % 3 else "r1/k8s-batch"
        wasted = {"wasted_s": 30 * i} if kind in ("drained", "overrun", "notice") else {}  # a notice's: not counted
        out.append(Event(kind=kind, time=T0 + timedelta(minutes=7 * i), region="r1", partition=partition,
                         instance=f"i-{i}", cause="test", source="agent", drill=i % 5 == 0, attributes=wasted))
    return out


@pytest.mark.services
def test_the_clickhouse_gates_count_what_the_double_counts_per_partition_and_window(
        clickhouse_migrated_url: str) -> None:
    events = _events()
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        rows = [row_of(e) for e in events] + [row_of(events[1])]  # a copy the ingest delivered twice
        client.raw_insert("events", EVENT_COLUMNS, encode_rows(rows), fmt=INSERT_FORMAT)
        real, double = ClickHouseGates(client), RecordedGates()
        for e in [*events, events[1]]:
            double.record(e)
        windows = [(T0, T0 + timedelta(hours=1)), (T0 + timedelta(minutes=7), T0 + timedelta(hours=3)),
                   (T0 - timedelta(days=1), T0 + timedelta(days=1)), (T0 + timedelta(days=2), T0 + timedelta(days=3))]
        for partition in ("r1/slurm-hpc", "r1/k8s-batch", "r9/none"):
            for since, until in windows:
                assert real.figures(partition, since, until) == double.figures(partition, since, until)
        everything = real.figures("r1/slurm-hpc", T0 - timedelta(days=1), T0 + timedelta(days=1))
        assert everything.refused == 2 and everything.drains > everything.overruns > 0 and everything.lost > 0
        assert everything.wasted_s == sum(30 * i for i, e in enumerate(events) if e.partition == "r1/slurm-hpc"
                                          and e.kind in ("drained", "overrun"))
        assert real.figures("r1/slurm-hpc", T0 + timedelta(days=2), T0 + timedelta(days=3)) == GateFigures()
    finally:
        client.close()


def test_an_unreachable_event_store_is_an_os_error_the_rollout_holds_on() -> None:
    class Broken:
        def query(self, *_: object, **__: object) -> None:
            raise ConnectionRefusedError("connection refused")

    with pytest.raises(OSError, match="r1/slurm-hpc"):
        ClickHouseGates(Broken()).figures("r1/slurm-hpc", T0, T0 + timedelta(hours=1))
