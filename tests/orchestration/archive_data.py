"""A month of archive files with real Parquet bytes, for the archive tests (local directory and RGW)."""

from __future__ import annotations

from datetime import UTC, datetime

from orchestration.archive import ArchiveFile

__all__ = ["MONTH", "month_files", "parquet"]

MONTH = datetime(2026, 10, 1, tzinfo=UTC)


def parquet(rows: int, value: float = 1.0) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"hour": list(range(rows)), "cost_eur": [value] * rows}), sink)
    return bytes(sink.getvalue().to_pybytes())


def month_files(cost: float = 1.0) -> list[ArchiveFile]:
    return [ArchiveFile("cost_attribution", parquet(5, cost), 5), ArchiveFile("savings_ledger", parquet(3), 3)]
