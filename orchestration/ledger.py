"""Hourly savings attribution (ADR-26): instance-hours, losses, storage and the orchestrator's footprint for
one hour, read from ClickHouse, turned into ledger lines and written back (``savings_ledger`` per workload × hour,
``cost_attribution`` per workload × pool × purchase model).

Inputs read from ClickHouse carry their polars frames (``range_frames``) and are attributed on them
(``ledger_frames``, exact integers); inputs built by hand, and an hour with an exact rounding tie, go through
``attribution.attribute`` on ``Decimal`` (``decimal_lines``, ``decimal_cost_rows``) — the same figures."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .attribution import LedgerLine
from .ledger_inputs import COST_COLUMNS, LEDGER_COLUMNS, HourInputs, decimal_cost_rows, decimal_lines
from .store import ClickHouse

if TYPE_CHECKING:
    from .range_frames import ArrowClickHouse

__all__ = ["COST_COLUMNS", "LEDGER_COLUMNS", "HourInputs", "attribute_hour", "decimal_cost_rows", "decimal_lines",
           "hour_rows", "read_hour", "write_hour"]


def read_hour(ch: ArrowClickHouse, region: str, hour: datetime, lookback_days: int = 90,
              until: datetime | None = None) -> HourInputs:
    """One hour's inputs: ``backfill.read_range`` over [hour, hour + 1 h). ``until`` ends a still-open hour
    early (the demo attributes its own, unfinished hour); None (the hourly asset): the whole hour."""
    from .backfill import read_range  # polars and pyarrow load only when an hour is read

    return read_range(ch, region, hour, hour + timedelta(hours=1), lookback_days, until)[0]


def attribute_hour(inputs: HourInputs) -> list[LedgerLine]:
    """The hour's ledger lines, one per workload (sorted)."""
    if inputs.frames is not None:
        from .ledger_frames import attribute_frames

        return attribute_frames(inputs.frames, "").lines[0]
    return decimal_lines(inputs)


def write_hour(ch: ClickHouse, region: str, inputs: HourInputs, lines: list[LedgerLine]) -> None:
    """Insert one attributed hour's ``savings_ledger`` and ``cost_attribution`` rows."""
    ledger_rows, cost_rows = hour_rows(region, inputs, lines)
    ch.insert("savings_ledger", ledger_rows, LEDGER_COLUMNS)
    ch.insert("cost_attribution", cost_rows, COST_COLUMNS)


def hour_rows(region: str, inputs: HourInputs,
              lines: list[LedgerLine]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The ``savings_ledger`` and ``cost_attribution`` rows of one attributed hour."""
    hour = inputs.hour.replace(tzinfo=None)
    ledger_rows = [(hour, *(getattr(ln, c) for c in LEDGER_COLUMNS[1:])) for ln in lines]
    if inputs.frames is not None:
        from .ledger_frames import attribute_frames

        return ledger_rows, attribute_frames(inputs.frames, region).cost_rows
    return ledger_rows, decimal_cost_rows(region, inputs)
