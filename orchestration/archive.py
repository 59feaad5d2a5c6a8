"""The monthly finance archive (ADR-25): cost attribution and the ledger for one month as Parquet, with a
SHA-256 manifest written last. Production writes to an S3 bucket with Object Lock (compliance mode); the
demo writes to a local directory and makes the files read-only, the nearest local stand-in."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

from .store import ClickHouse

__all__ = ["archive_month"]

_TABLES = {
    "cost_attribution": "SELECT hour, region, workload, pool, purchase_model, instance_hours, cost_eur, "
                        "counterfactual_eur, saving_eur, wasted_work_eur, attributes FROM cost_attribution FINAL "
                        "WHERE toStartOfMonth(hour) = {m:Date} ORDER BY workload, pool, hour",
    "savings_ledger": "SELECT * EXCEPT computed_at FROM savings_ledger FINAL WHERE toStartOfMonth(hour) = {m:Date} "
                      "ORDER BY workload, hour",
}


def archive_month(ch: ClickHouse, month: datetime, directory: Path, region: str) -> dict[str, object]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = directory / region / month.strftime("%Y-%m")
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {"month": month.strftime("%Y-%m"), "region": region, "files": {}}
    files: dict[str, object] = {}
    for name, sql in _TABLES.items():
        client = ch.client()  # type: ignore[attr-defined]
        try:
            table = client.query_arrow(sql, parameters={"m": month.date()})
        finally:
            client.close()
        target = out / f"{name}.parquet"
        if target.exists():
            target.chmod(0o644)
        pq.write_table(pa.table(table), target)
        target.chmod(0o444)
        files[name] = {"rows": table.num_rows, "sha256": hashlib.sha256(target.read_bytes()).hexdigest()}
    manifest["files"] = files
    m = out / "manifest.json"
    if m.exists():
        m.chmod(0o644)
    m.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    m.chmod(0o444)
    return manifest
