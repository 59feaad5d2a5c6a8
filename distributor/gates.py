"""Where the rollout's gate figures come from (ADR-32): the lifecycle events of the canary partition.

``GateSource`` is the observation protocol the rollout reads through: ``figures(partition, since, until)``.
``ClickHouseGates`` is the production adapter: one ``SELECT kind, count() … GROUP BY kind`` over the ``events``
table (``stores.clickhouse.client``), drills included (ADR-33: drills count in overrun and drain figures).
The wasted work is the ``wasted_s`` attribute the agent puts on every ``drained``/``overrun`` event
(docs/agent.md). ``figures_from_counts`` is the one mapping from event kinds to figures, shared with the test double
(``tests/doubles/gates.py``) so both count the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from contracts.subjects import EventKind

from .rollout import GateFigures

__all__ = ["GATE_KINDS", "ClickHouseGates", "GateSource", "figures_from_counts"]

# figure -> the event kinds it counts
GATE_KINDS: dict[str, tuple[str, ...]] = {
    "refused": (EventKind.BUNDLE_REFUSED,),
    "drains": (EventKind.DRAINED, EventKind.OVERRUN),
    "overruns": (EventKind.OVERRUN,),
    "shortfalls": (EventKind.SHORTFALL,),
    "breaches": (EventKind.CONTRACT_BREACH,),
    "lost": (EventKind.LOST, EventKind.NO_NOTICE_LOSS),
}


class GateSource(Protocol):
    """Reads the gate figures of one partition over ``[since, until)``; raises ``OSError`` when it cannot."""

    def figures(self, partition: str, since: datetime, until: datetime) -> GateFigures:
        """The gate figures of ``partition`` between ``since`` and ``until``."""


def figures_from_counts(counts: Mapping[str, int], wasted_s: float = 0.0) -> GateFigures:
    """The figures from a count of events by kind and the finished drains' summed ``wasted_s``."""
    figures = {name: sum(int(counts.get(str(k), 0)) for k in kinds) for name, kinds in GATE_KINDS.items()}
    return GateFigures(**figures, wasted_s=max(0.0, float(wasted_s)))


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


class ClickHouseGates:
    """The figures from ClickHouse's ``events`` (a ``clickhouse_connect`` client)."""

    def __init__(self, client: Any) -> None:
        """``client``: ``stores.clickhouse.client(url)``."""
        self.client = client

    def figures(self, partition: str, since: datetime, until: datetime) -> GateFigures:
        """Count the partition's gate events in ``[since, until)``; a store error becomes ``OSError``."""
        kinds = sorted({str(k) for ks in GATE_KINDS.values() for k in ks})
        try:
            rows = self.client.query(
                "SELECT kind, count(), sum(JSONExtractFloat(attributes, 'wasted_s')) FROM (SELECT DISTINCT event_id, "
                "kind, attributes FROM events WHERE partition = {p:String} AND time >= {since:DateTime64(3)} "
                "AND time < {until:DateTime64(3)} AND kind IN {kinds:Array(String)}) GROUP BY kind",
                parameters={"p": partition, "since": _naive_utc(since), "until": _naive_utc(until),
                            "kinds": kinds}).result_rows
        except Exception as exc:  # clickhouse_connect raises its own errors; the rollout holds on any
            raise OSError(f"gate figures of {partition} unreadable from ClickHouse: {exc}") from exc
        drains = {str(k) for k in GATE_KINDS["drains"]}
        return figures_from_counts({str(kind): int(n) for kind, n, _ in rows},
                                   sum(float(w) for kind, _, w in rows if str(kind) in drains))
