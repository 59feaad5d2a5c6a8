"""Attribution over a range of hours in one pass (a backfill, or a partition range run as one run): each
input is read once for the whole range (the instance spans and losses as Arrow), split into hours and
attributed on polars frames (``range_frames``, ``ledger_frames``: exact integers, the same lines as
``ledger.attribute_hour``), and all rows are written in two inserts. ``ledger.read_hour`` is ``read_range``
over one hour."""

from __future__ import annotations

from datetime import datetime

from .attribution import LedgerLine
from .ledger_frames import attribute_frames
from .ledger_inputs import COST_COLUMNS, LEDGER_COLUMNS, HourInputs, hour_inputs
from .range_frames import ArrowClickHouse, read_frames

__all__ = ["attribute_range", "read_range"]


def read_range(ch: ArrowClickHouse, region: str, start: datetime, end: datetime, lookback_days: int = 90,
               until: datetime | None = None) -> list[HourInputs]:
    """One ``HourInputs`` per hour in [start, end) (whole hours, UTC), each carrying its frames.

    ``until`` ends a still-open range early (the demo attributes its own, unfinished hour): instance spans,
    losses and rate cards stop there instead of at ``end``, so instances still running are not charged for
    time that has not happened. Storage and the orchestrator's footprint are per hour and stay whole.
    ``ledger.read_hour`` is the one-hour case."""
    inputs: list[HourInputs] = hour_inputs(read_frames(ch, region, start, end, lookback_days, until))
    return inputs


def attribute_range(ch: ArrowClickHouse, region: str, start: datetime, end: datetime) -> list[LedgerLine]:
    """Read, attribute and write every hour of [start, end); returns the ledger lines."""
    ledger = attribute_frames(read_frames(ch, region, start, end), region)
    ch.insert("savings_ledger", ledger.ledger_rows, LEDGER_COLUMNS)
    ch.insert("cost_attribution", ledger.cost_rows, COST_COLUMNS)
    return [ln for lines in ledger.lines for ln in lines]
