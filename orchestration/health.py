"""Asset health for SRE (ADR-28): the freshness each asset promises, and the rules of the asset checks on the
groups, the breaches and the archive. Pure rules first, I/O below; no Dagster import (``orchestration.defs``
turns these into Dagster freshness checks and asset checks)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .store import ClickHouse, Postgres

if TYPE_CHECKING:
    from .archive_targets import ArchiveTarget

__all__ = ["FRESHNESS", "archive_counts", "archive_matches_month", "breaches_have_events", "groups_cover_pools",
           "groups_in_force_rows", "latest_archive", "latest_breach_time", "latest_group_history", "outbox_has_events"]

# asset key -> the most its last update may lag behind now before its freshness check fails
FRESHNESS: dict[str, timedelta] = {
    "pool_rankings": timedelta(minutes=10),
    "savings_attribution": timedelta(hours=2),
    "correlation_groups": timedelta(hours=26),
    "recommendations": timedelta(hours=26),
    "cost_archive": timedelta(days=32),
}


def groups_cover_pools(pools: Iterable[str], assigned: Iterable[tuple[str, str]]) -> tuple[bool, str]:
    """Every pool in exactly one group: ``assigned`` is (pool, group) as written; a pool missing, a pool in two
    groups or a pool that is not in the catalogue fails, named."""
    wanted = set(pools)
    seen = Counter(p for p, _ in assigned)
    missing = sorted(wanted - set(seen))
    twice = sorted(p for p, n in seen.items() if n > 1)
    unknown = sorted(set(seen) - wanted)
    problems = [f"{label}: {', '.join(names[:10])}{' …' if len(names) > 10 else ''} ({len(names)})"
                for label, names in (("in no group", missing), ("in more than one group", twice),
                                     ("not in the catalogue", unknown)) if names]
    if not wanted:
        return False, "no reclaimable pools in the catalogue"
    if problems:
        return False, "pools " + "; ".join(problems)
    return True, f"each of {len(wanted)} pools is in exactly one of {len({g for _, g in assigned})} groups"


def archive_matches_month(manifest: Mapping[str, object], counted: Mapping[str, int],
                          in_files: Mapping[str, int]) -> tuple[bool, str]:
    """The archive of a month holds what ClickHouse holds for that month: the manifest's row count of each
    table equals the rows in ClickHouse (``counted``) and the rows in the Parquet file (``in_files``)."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return False, f"archive {manifest.get('month')}: the manifest lists no files"
    wrong = []
    for table, meta in sorted(files.items()):
        rows = int(meta.get("rows", -1)) if isinstance(meta, dict) else -1
        if rows != counted.get(table) or rows != in_files.get(table):
            wrong.append(f"{table}: manifest {rows}, ClickHouse {counted.get(table)}, file {in_files.get(table)}")
    month = manifest.get("month")
    if wrong:
        return False, f"archive {month} does not match the month: " + "; ".join(wrong)
    return True, f"archive {month}: " + ", ".join(f"{t} {counted[t]} rows" for t in sorted(files)) + \
        " (manifest, ClickHouse and files agree)"


def breaches_have_events(breached: Mapping[str, str], expected: Mapping[str, str],
                         enqueued: set[str]) -> tuple[bool, str]:
    """Each breached workload (``breached``: workload -> owner) has an owner to alert and its
    ``contract-breach`` event (``expected``: workload -> event id) in the outbox (``enqueued``)."""
    no_owner = sorted(w for w, owner in breached.items() if not owner)
    no_event = sorted(w for w in breached if expected.get(w) not in enqueued)
    if no_owner or no_event:
        parts = ([f"no owner to alert: {', '.join(no_owner)}"] if no_owner else []) + \
                ([f"no contract-breach event in the outbox: {', '.join(no_event)}"] if no_event else [])
        return False, "; ".join(parts)
    if not breached:
        return True, "no workload above its declared interruption tolerance"
    return True, f"{len(breached)} breach(es), each with its contract-breach event and an owner: " + \
        ", ".join(f"{w} ({o})" for w, o in sorted(breached.items()))


# -- I/O -------------------------------------------------------------------------------------------------
def latest_group_history(ch: ClickHouse, region: str) -> list[tuple[str, str]]:
    """(pool, group) of the latest groups computation kept in ClickHouse."""
    return [(str(p), str(g)) for p, g in ch.rows(
        "SELECT pool, group_id FROM correlation_group_history WHERE region = {r:String} AND computed_at = "
        "(SELECT max(computed_at) FROM correlation_group_history WHERE region = {r:String})", {"r": region})]


def groups_in_force_rows(pg: Postgres, region: str) -> list[tuple[str, str]]:
    """(pool, group) of the groups in force in PostgreSQL (what the controller reads)."""
    with pg.connection() as conn:
        rows = conn.execute("SELECT pool, group_id FROM correlation_groups WHERE region = %s", (region,)).fetchall()
    return [(str(p), str(g)) for p, g in rows]


def latest_archive(target: ArchiveTarget, region: str) -> str | None:
    """The newest archived month's prefix (``<region>/<YYYY-MM>/``, one with a manifest), if any."""
    months = target.months(region)
    return f"{region}/{months[-1]}/" if months else None


def archive_counts(ch: ClickHouse, target: ArchiveTarget, prefix: str
                   ) -> tuple[dict[str, object], dict[str, int], dict[str, int]]:
    """The manifest of an archived month (at ``prefix``), the rows ClickHouse holds for that month and the rows
    in each Parquet file the manifest lists (the version it pins, in a versioned bucket; a missing file: absent)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = target.read(prefix + "manifest.json")
    if raw is None:
        return {"month": prefix, "files": {}}, {}, {}
    manifest = json.loads(raw)
    month = datetime.strptime(str(manifest["month"]), "%Y-%m").date()
    counted = {
        "cost_attribution": int(ch.rows("SELECT count() FROM cost_attribution FINAL "
                                        "WHERE toStartOfMonth(hour) = {m:Date}", {"m": month})[0][0]),
        "savings_ledger": int(ch.rows("SELECT count() FROM savings_ledger FINAL "
                                      "WHERE toStartOfMonth(hour) = {m:Date}", {"m": month})[0][0]),
    }
    in_files = {}
    for table, meta in sorted(dict(manifest.get("files") or {}).items()):
        data = target.read(f"{prefix}{table}.parquet", meta.get("version_id") if isinstance(meta, dict) else None)
        if data is not None:
            in_files[table] = int(pq.read_metadata(pa.BufferReader(data)).num_rows)
    return manifest, counted, in_files


def latest_breach_time(ch: ClickHouse) -> datetime | None:
    """When the latest breaches were computed (the data clock of that materialisation)."""
    from .store import utc

    rows = ch.rows("SELECT max(computed_at), count() FROM contract_breaches")
    return utc(rows[0][0]) if rows and rows[0][1] else None


def outbox_has_events(pg: Postgres, event_ids: Iterable[str]) -> set[str]:
    """Which of ``event_ids`` are in the outbox (enqueued, sent or not)."""
    ids = sorted(set(event_ids))
    if not ids:
        return set()
    with pg.connection() as conn:
        rows = conn.execute("SELECT event_id::text FROM outbox WHERE event_id = ANY(%s::uuid[])", (ids,)).fetchall()
    return {str(r[0]) for r in rows}
