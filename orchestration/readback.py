"""What the asset checks read back from ClickHouse: the latest ranking and the savings ledger as a frame."""

from __future__ import annotations

from typing import Any

from .ledger_inputs import LEDGER_COLUMNS
from .store import ClickHouse

__all__ = ["HOUR_COLUMNS", "latest_ranking", "ledger_frame"]

HOUR_COLUMNS = ["instance_hours", "useful_hours", "wasted_hours", "defect_wasted_hours", "reclaimable_hours",
                "fallback_hours"]


def latest_ranking(ch: ClickHouse, region: str) -> list[tuple[str, float]]:
    """(pool, score) of the region's latest ranking generation."""
    return [(str(p), float(s)) for p, s in ch.rows(
        "SELECT pool, score FROM rankings FINAL WHERE region = {r:String} AND generation = "
        "(SELECT max(generation) FROM rankings WHERE region = {r:String})", {"r": region})]


def ledger_frame(ch: ClickHouse) -> Any:
    """The whole savings ledger as a pandas frame (columns ``LEDGER_COLUMNS``)."""
    import pandas as pd

    rows = ch.rows(f"SELECT {', '.join(LEDGER_COLUMNS)} FROM savings_ledger FINAL")
    return pd.DataFrame(rows, columns=list(LEDGER_COLUMNS))
