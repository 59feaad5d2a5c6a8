"""The finance archive without services (ADR-25): the re-run rule as a table, and the whole write on the local
directory target with real Parquet bytes — identical re-run a no-op, a different one refused with ARC001 and
nothing changed, a correction beside it, settings that cannot be used refused with ARC004."""

from __future__ import annotations

import hashlib
import json
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from orchestration.archive import archive_files, decide, manifest_of, month_prefix
from orchestration.archive_targets import LocalDirectoryTarget, S3ObjectLockTarget, target_for
from orchestration.errors import ArchiveConfigError, ArchiveRefused

from .archive_data import MONTH, month_files


def manifest(**digests: str) -> dict[str, object]:
    return {"month": "2026-10", "region": "r1", "files": {t: {"rows": 1, "sha256": d} for t, d in digests.items()}}


@pytest.mark.parametrize(("stored", "new", "action", "changed"), [
    (None, manifest(cost_attribution="a", savings_ledger="b"), "write", ()),
    (manifest(cost_attribution="a", savings_ledger="b"), manifest(cost_attribution="a", savings_ledger="b"),
     "skip", ()),
    (manifest(cost_attribution="a", savings_ledger="b"), manifest(cost_attribution="a", savings_ledger="c"),
     "refuse", ("savings_ledger",)),
    (manifest(cost_attribution="a"), manifest(cost_attribution="a", savings_ledger="b"),
     "refuse", ("savings_ledger",)),
    (manifest(cost_attribution="a", savings_ledger="b"), manifest(cost_attribution="x"),
     "refuse", ("cost_attribution", "savings_ledger")),
], ids=["absent-writes", "identical-skips", "a-changed-file-refuses", "a-new-table-refuses",
        "a-dropped-table-refuses"])
def test_a_rerun_writes_an_absent_month_skips_an_identical_one_and_refuses_a_different_one(
        stored: dict[str, object] | None, new: dict[str, object], action: str, changed: tuple[str, ...]) -> None:
    decision = decide(stored, new)
    assert (decision.action, decision.changed) == (action, changed)


def test_a_stored_manifest_s_version_ids_do_not_make_an_identical_export_differ() -> None:
    files = month_files()
    stored = manifest_of(MONTH, "r1", files, versions={"cost_attribution": "v1", "savings_ledger": "v2"})
    assert decide(stored, manifest_of(MONTH, "r1", files)).action == "skip"


def test_a_month_is_written_read_only_with_its_manifest_last_and_the_sha256_of_each_file(tmp_path: Path) -> None:
    result = archive_files(LocalDirectoryTarget(tmp_path), MONTH, "r1", month_files())
    folder = tmp_path / "r1" / "2026-10"
    assert result.action == "written" and result.location == str(folder)
    stored = json.loads((folder / "manifest.json").read_text())
    assert stored == result.manifest
    for table in ("cost_attribution", "savings_ledger"):
        data = (folder / f"{table}.parquet").read_bytes()
        assert stored["files"][table]["sha256"] == hashlib.sha256(data).hexdigest()
        assert not (folder / f"{table}.parquet").stat().st_mode & stat.S_IWUSR
    assert stored["files"]["cost_attribution"]["rows"] == 5 and "version_id" not in stored["files"]["cost_attribution"]


def test_an_identical_rerun_is_a_no_op_that_says_so(tmp_path: Path) -> None:
    target = LocalDirectoryTarget(tmp_path)
    archive_files(target, MONTH, "r1", month_files())
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "r1" / "2026-10").iterdir()}
    again = archive_files(target, MONTH, "r1", month_files())
    assert again.action == "unchanged"
    assert again.message == f"archive 2026-10 of r1 is already at {tmp_path}/r1/2026-10 with the same SHA-256s: " \
                            "nothing written"
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "r1" / "2026-10").iterdir()} == before


def test_a_rerun_with_different_data_is_refused_with_arc001_and_nothing_changes(tmp_path: Path) -> None:
    target = LocalDirectoryTarget(tmp_path)
    archive_files(target, MONTH, "r1", month_files())
    before = {p.name: p.read_bytes() for p in (tmp_path / "r1" / "2026-10").iterdir()}
    with pytest.raises(ArchiveRefused) as refused:
        archive_files(target, MONTH, "r1", month_files(cost=2.0))
    assert refused.value.code == "ARC001"
    message = str(refused.value)
    assert message.startswith(f"ARC001 archive 2026-10 of r1 is already at {tmp_path}/r1/2026-10 ")
    assert "(cost_attribution: SHA-256 changed); nothing was written" in message
    assert "write the correction as a new archive (set archive_correction" in message
    assert {p.name: p.read_bytes() for p in (tmp_path / "r1" / "2026-10").iterdir()} == before


def test_a_correction_is_a_separately_named_archive_beside_the_month(tmp_path: Path) -> None:
    target = LocalDirectoryTarget(tmp_path)
    archive_files(target, MONTH, "r1", month_files())
    fixed = archive_files(target, MONTH, "r1", month_files(cost=2.0), correction="fix-1")
    assert fixed.action == "written" and fixed.location == f"{tmp_path}/r1/2026-10-fix-1"
    assert fixed.manifest["correction"] == "fix-1" and fixed.manifest["month"] == "2026-10"
    assert target.months("r1") == ["2026-10"]  # the month itself is still the one the check reads
    with pytest.raises(ArchiveConfigError, match=r"^ARC004 archive_correction 'Fix 1' is not a name"):
        month_prefix("r1", MONTH, "Fix 1")


@pytest.mark.parametrize(("url", "wanted"), [
    ("https://bucket", "archive_url 'https://bucket' is not s3://BUCKET"),
    ("s3://bucket/prefix", "archive_url 's3://bucket/prefix' is not s3://BUCKET"),
    ("s3://", "archive_url 's3://' is not s3://BUCKET"),
])
def test_an_archive_url_that_is_not_a_bucket_is_refused_with_arc004(url: str, wanted: str, tmp_path: Path) -> None:
    with pytest.raises(ArchiveConfigError) as refused:
        target_for(url, str(tmp_path))
    assert refused.value.code == "ARC004" and str(refused.value).startswith(f"ARC004 {wanted}")


def test_no_archive_url_is_the_local_directory_and_a_non_positive_retention_is_refused(tmp_path: Path) -> None:
    target = target_for("", str(tmp_path))
    assert isinstance(target, LocalDirectoryTarget) and target.root == tmp_path
    with pytest.raises(ArchiveConfigError, match="archive_retention_days 0 is not positive"):
        target_for("s3://finance", str(tmp_path), 0)
    with pytest.raises(ArchiveConfigError, match="is not positive"):
        S3ObjectLockTarget(object(), "finance", retention=timedelta(days=-1))
