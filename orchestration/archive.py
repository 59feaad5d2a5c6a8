"""The monthly finance archive (ADR-25): cost attribution and the ledger for one month as Parquet, with a
SHA-256 manifest written last, to an ``ArchiveTarget`` (``archive_targets``): an S3 bucket with Object Lock
in production (compliance mode, Ceph RGW), a local read-only directory in the demo.

An archived month is never rewritten. A re-run reads the month's manifest first (``decide``, pure): none →
write the files, then the manifest; the same SHA-256s → a no-op that says so; different ones → ``ArchiveRefused``
(ARC001) and nothing stored changes. A correction is a new, separately named archive (``correction``:
``<region>/<YYYY-MM>-<name>/``), never an overwrite.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from .archive_targets import ArchiveTarget, LocalDirectoryTarget
from .errors import ArchiveConfigError, ArchiveRefused
from .store import ClickHouse

__all__ = ["MANIFEST", "ArchiveFile", "ArchiveResult", "Decision", "archive_files", "archive_month", "decide",
           "export_month", "manifest_of", "month_prefix"]

MANIFEST = "manifest.json"
_CORRECTION = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_TABLES = {
    "cost_attribution": "SELECT hour, region, workload, pool, purchase_model, instance_hours, cost_eur, "
                        "counterfactual_eur, saving_eur, wasted_work_eur, attributes FROM cost_attribution FINAL "
                        "WHERE toStartOfMonth(hour) = {m:Date} ORDER BY region, workload, pool, purchase_model, hour",
    "savings_ledger": "SELECT * EXCEPT computed_at FROM savings_ledger FINAL WHERE toStartOfMonth(hour) = {m:Date} "
                      "ORDER BY workload, hour",
}


@dataclass(frozen=True)
class ArchiveFile:
    """One table of the month as Parquet bytes."""

    table: str
    data: bytes
    rows: int

    @property
    def filename(self) -> str:
        """The file's name in the archive: ``<table>.parquet``."""
        return f"{self.table}.parquet"

    @property
    def sha256(self) -> str:
        """The SHA-256 of the file's bytes, hex."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Decision:
    """What a run does with a month: ``write`` it, ``skip`` it (already archived, identical), or ``refuse``
    (already archived, different: ``changed`` names the tables whose SHA-256 differs)."""

    action: Literal["write", "skip", "refuse"]
    changed: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class ArchiveResult:
    action: Literal["written", "unchanged"]
    location: str
    manifest: dict[str, object]
    message: str


def _digests(manifest: Mapping[str, object]) -> dict[str, str]:
    files = manifest.get("files")
    if not isinstance(files, Mapping):
        return {}
    return {str(name): str(entry.get("sha256")) if isinstance(entry, Mapping) else "" for name, entry in files.items()}


def decide(stored: Mapping[str, object] | None, new: Mapping[str, object]) -> Decision:
    """The re-run rule (pure): compare the stored manifest's SHA-256s with the new export's."""
    if stored is None:
        return Decision("write")
    old, fresh = _digests(stored), _digests(new)
    changed = tuple(sorted(t for t in old.keys() | fresh.keys() if old.get(t) != fresh.get(t)))
    return Decision("refuse", changed) if changed else Decision("skip")


def month_prefix(region: str, month: datetime, correction: str = "") -> str:
    """``<region>/<YYYY-MM>/`` (a correction: ``<region>/<YYYY-MM>-<name>/``)."""
    if correction and not _CORRECTION.match(correction):
        raise ArchiveConfigError(f"archive_correction {correction!r} is not a name: use lower-case letters, digits "
                                 "and '-', starting with a letter, at most 32 (e.g. 'fix-1')")
    return f"{region}/{month:%Y-%m}{'-' + correction if correction else ''}/"


def manifest_of(month: datetime, region: str, files: Sequence[ArchiveFile], correction: str = "",
                versions: Mapping[str, str | None] | None = None) -> dict[str, object]:
    """The manifest: month, region, each table's rows and SHA-256 (and, in a versioned bucket, the locked
    version's id). No timestamp: an identical export gives an identical manifest."""
    entries: dict[str, object] = {}
    for f in files:
        entry: dict[str, object] = {"rows": f.rows, "sha256": f.sha256}
        version = (versions or {}).get(f.table)
        if version:
            entry["version_id"] = version
        entries[f.table] = entry
    manifest: dict[str, object] = {"month": f"{month:%Y-%m}", "region": region, "files": entries}
    if correction:
        manifest["correction"] = correction
    return manifest


def export_month(ch: ClickHouse, month: datetime) -> list[ArchiveFile]:
    """The month's tables from ClickHouse as Parquet bytes, in a fixed row order (the same rows give the same
    bytes, so a re-run can be compared by SHA-256)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = []
    for name, sql in _TABLES.items():
        client = ch.client()  # type: ignore[attr-defined]
        try:
            table = client.query_arrow(sql, parameters={"m": month.date()})
        finally:
            client.close()
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table(table), sink)
        files.append(ArchiveFile(name, sink.getvalue().to_pybytes(), table.num_rows))
    return files


def _refusal(target: ArchiveTarget, month: datetime, region: str, where: str, changed: Sequence[str]) -> str:
    return (f"archive {month:%Y-%m} of {region} is already at {where} and the new export differs "
            f"({', '.join(changed)}: SHA-256 changed); nothing was written. An archived month is never "
            "overwritten: write the correction as a new archive (set archive_correction, SCO_ARCHIVE_CORRECTION, "
            f"to a name such as 'fix-1': it goes to {target.where(month_prefix(region, month, 'fix-1'))})")


def archive_files(target: ArchiveTarget, month: datetime, region: str, files: Sequence[ArchiveFile],
                  correction: str = "") -> ArchiveResult:
    """Archive ``files`` as the month unless it is archived: the files first, the manifest last."""
    prefix = month_prefix(region, month, correction)
    where = target.where(prefix)
    new = manifest_of(month, region, files, correction)
    raw = target.read(prefix + MANIFEST)
    stored: dict[str, object] | None = json.loads(raw) if raw is not None else None
    decision = decide(stored, new)
    if decision.action == "refuse":
        raise ArchiveRefused(_refusal(target, month, region, where, decision.changed))
    if decision.action == "skip" and stored is not None:
        return ArchiveResult("unchanged", where, stored,
                             f"archive {month:%Y-%m} of {region} is already at {where} with the same SHA-256s: "
                             "nothing written")
    versions = {f.table: target.put(prefix + f.filename, f.data, f.sha256) for f in files}
    manifest = manifest_of(month, region, files, correction, versions)
    body = json.dumps(manifest, indent=2, sort_keys=True).encode()
    target.put(prefix + MANIFEST, body, hashlib.sha256(body).hexdigest())
    return ArchiveResult("written", where, manifest,
                         f"archive {month:%Y-%m} of {region} written to {where}: " +
                         ", ".join(f"{f.table} {f.rows} rows" for f in files))


def archive_month(ch: ClickHouse, month: datetime, target: ArchiveTarget | Path, region: str,
                  correction: str = "") -> ArchiveResult:
    """Export the month from ClickHouse and archive it (a ``Path`` is the local directory target)."""
    where = LocalDirectoryTarget(target) if isinstance(target, Path) else target
    return archive_files(where, month, region, export_month(ch, month), correction)
