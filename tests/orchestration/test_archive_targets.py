"""The finance archive on the real Ceph RGW of the test bed (ADR-25, issue 16): a month archived into a bucket
with Object Lock, every version in COMPLIANCE mode until its retain-until date; the manifest pins the locked
versions; an identical re-run writes nothing, a different one is refused (ARC001) with every stored version
unchanged; and the lock itself holds — RGW refuses to delete a locked version or to shorten its retention.

Locked objects cannot be removed before their date, so these buckets (``sco-arc-test-*``) keep a short
retention (``RETENTION``) and are swept at the start of the next session once their locks have lapsed."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from orchestration.archive import archive_files
from orchestration.archive_targets import S3ObjectLockTarget, archive_bucket_policy, archive_s3_client
from orchestration.errors import ArchiveBucketUnlocked, ArchiveRefused
from tests.support.testbeds import CEPH_ENV, ceph_env

from .archive_data import MONTH, month_files

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("ceph-bed")]
RETENTION = timedelta(minutes=10)  # long enough for a loaded box, short enough to sweep the next session
PREFIX = "sco-arc-test-"


def _empty_and_remove(s3: Any, bucket: str) -> None:
    """Delete every version (a locked one is refused until its date) and then the bucket; a refusal is left."""
    try:
        versions = s3.list_object_versions(Bucket=bucket)
        for v in versions.get("Versions", []) + versions.get("DeleteMarkers", []):
            with contextlib.suppress(ClientError):
                s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
        s3.delete_bucket(Bucket=bucket)
    except ClientError:
        pass


@pytest.fixture(scope="module")
def s3() -> Any:
    if not CEPH_ENV.exists():
        pytest.fail(f"{CEPH_ENV} is missing: run deploy/testbed/ceph/up first")
    env = ceph_env()
    ident = env["identities"]["orchestrator"]
    client = archive_s3_client(env["endpoint"], ident["access_key"], ident["secret_key"])
    for old in client.list_buckets().get("Buckets", []):  # earlier sessions' buckets whose locks have lapsed
        if str(old["Name"]).startswith(PREFIX) and old["CreationDate"] < datetime.now(UTC) - 2 * RETENTION:
            _empty_and_remove(client, old["Name"])
    return client


@pytest.fixture
def target(s3: Any) -> Iterator[S3ObjectLockTarget]:
    now = datetime.now(UTC)
    archive = S3ObjectLockTarget(s3, f"{PREFIX}{uuid.uuid4().hex[:12]}", RETENTION, clock=lambda: now)
    archive.ensure_bucket(create=True)
    yield archive
    _empty_and_remove(s3, archive.bucket)  # only what is not locked goes now


def _versions(s3: Any, bucket: str) -> dict[tuple[str, str], str]:
    """(key, version id) -> ETag of every version in the bucket."""
    got = s3.list_object_versions(Bucket=bucket).get("Versions", [])
    return {(v["Key"], v["VersionId"]): v["ETag"] for v in got}


def test_a_month_is_archived_with_every_version_locked_in_compliance_mode_until_the_retention_ends(
        s3: Any, target: S3ObjectLockTarget) -> None:
    assert s3.get_object_lock_configuration(Bucket=target.bucket)["ObjectLockConfiguration"] == \
        {"ObjectLockEnabled": "Enabled"}
    assert s3.get_bucket_versioning(Bucket=target.bucket)["Status"] == "Enabled"
    files = month_files()
    result = archive_files(target, MONTH, "r1", files)
    assert result.action == "written" and result.location == f"s3://{target.bucket}/r1/2026-10/"
    keys = sorted(k for k, _ in _versions(s3, target.bucket))
    assert keys == ["r1/2026-10/cost_attribution.parquet", "r1/2026-10/manifest.json",
                    "r1/2026-10/savings_ledger.parquet"]
    stored = json.loads(s3.get_object(Bucket=target.bucket, Key="r1/2026-10/manifest.json")["Body"].read())
    assert stored == result.manifest
    until = target.clock() + RETENTION
    for f in files:
        entry = stored["files"][f.table]
        key = f"r1/2026-10/{f.filename}"
        got = s3.get_object(Bucket=target.bucket, Key=key, VersionId=entry["version_id"])
        assert hashlib.sha256(got["Body"].read()).hexdigest() == entry["sha256"] == f.sha256
        assert got["Metadata"] == {"sha256": f.sha256}
        retention = s3.get_object_retention(Bucket=target.bucket, Key=key, VersionId=entry["version_id"])["Retention"]
        assert retention["Mode"] == "COMPLIANCE"
        assert abs(retention["RetainUntilDate"] - until) < timedelta(seconds=1)  # RGW keeps whole seconds
    manifest_lock = s3.get_object_retention(Bucket=target.bucket, Key="r1/2026-10/manifest.json")["Retention"]
    assert manifest_lock["Mode"] == "COMPLIANCE"
    assert target.months("r1") == ["2026-10"] and target.months("r2") == []


def test_an_identical_rerun_writes_nothing_and_says_so(s3: Any, target: S3ObjectLockTarget) -> None:
    archive_files(target, MONTH, "r1", month_files())
    before = _versions(s3, target.bucket)
    again = archive_files(target, MONTH, "r1", month_files())
    assert again.action == "unchanged"
    assert again.message == (f"archive 2026-10 of r1 is already at s3://{target.bucket}/r1/2026-10/ with the same "
                             "SHA-256s: nothing written")
    assert _versions(s3, target.bucket) == before


def test_a_rerun_with_changed_data_is_refused_with_arc001_and_the_stored_versions_are_unchanged(
        s3: Any, target: S3ObjectLockTarget) -> None:
    first = archive_files(target, MONTH, "r1", month_files())
    before = _versions(s3, target.bucket)
    with pytest.raises(ArchiveRefused) as refused:
        archive_files(target, MONTH, "r1", month_files(cost=2.0))
    message = str(refused.value)
    assert refused.value.code == "ARC001"
    assert message.startswith(f"ARC001 archive 2026-10 of r1 is already at s3://{target.bucket}/r1/2026-10/ ")
    assert "(cost_attribution: SHA-256 changed); nothing was written" in message
    assert f"it goes to s3://{target.bucket}/r1/2026-10-fix-1/" in message
    assert _versions(s3, target.bucket) == before
    latest = json.loads(s3.get_object(Bucket=target.bucket, Key="r1/2026-10/manifest.json")["Body"].read())
    assert latest == first.manifest


def test_rgw_refuses_to_delete_a_locked_version_or_to_shorten_or_weaken_its_lock(
        s3: Any, target: S3ObjectLockTarget) -> None:
    manifest = archive_files(target, MONTH, "r1", month_files()).manifest
    key = "r1/2026-10/cost_attribution.parquet"
    version = manifest["files"]["cost_attribution"]["version_id"]  # type: ignore[index]
    with pytest.raises(ClientError) as deleted:
        s3.delete_object(Bucket=target.bucket, Key=key, VersionId=version)
    assert deleted.value.response["Error"]["Code"] == "AccessDenied"
    with pytest.raises(ClientError) as bypassed:  # compliance: not even with the governance bypass
        s3.delete_object(Bucket=target.bucket, Key=key, VersionId=version, BypassGovernanceRetention=True)
    assert bypassed.value.response["Error"]["Code"] == "AccessDenied"
    until = target.clock() + RETENTION
    for mode, date in (("COMPLIANCE", until - timedelta(minutes=5)), ("GOVERNANCE", until)):
        with pytest.raises(ClientError) as changed:
            s3.put_object_retention(Bucket=target.bucket, Key=key, VersionId=version,
                                    Retention={"Mode": mode, "RetainUntilDate": date})
        assert changed.value.response["Error"]["Code"] == "AccessDenied", mode
    got = s3.get_object(Bucket=target.bucket, Key=key, VersionId=version)
    assert hashlib.sha256(got["Body"].read()).hexdigest() == month_files()[0].sha256


def test_a_bucket_without_object_lock_or_no_bucket_at_all_is_refused_with_arc002(s3: Any) -> None:
    plain = f"{PREFIX}plain-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=plain)
    try:
        with pytest.raises(ArchiveBucketUnlocked) as unlocked:
            S3ObjectLockTarget(s3, plain).ensure_bucket(create=True)
        assert str(unlocked.value).startswith(f"ARC002 archive bucket {plain!r} has no Object Lock")
    finally:
        _empty_and_remove(s3, plain)
    missing = f"{PREFIX}absent-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ArchiveBucketUnlocked, match=rf"^ARC002 archive bucket '{missing}' does not exist"):
        S3ObjectLockTarget(s3, missing).ensure_bucket(create=False)
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=missing)  # and it was not created


def test_every_put_carries_the_content_md5_rgw_checks_and_a_wrong_one_is_refused(
        s3: Any, target: S3ObjectLockTarget) -> None:
    sent: list[tuple[str, str]] = []

    def record(request: Any, **_: Any) -> None:
        sent.append((request.url.rsplit("/", 1)[-1], request.headers.get("Content-MD5", b"").decode()))

    s3.meta.events.register("before-send.s3.PutObject", record)
    try:
        files = month_files()
        archive_files(target, MONTH, "r1", files)
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", record)
    wanted = {f.filename: base64.b64encode(hashlib.md5(f.data, usedforsecurity=False).digest()).decode()
              for f in files}
    assert {name: md5 for name, md5 in sent if name in wanted} == wanted
    assert [name for name, _ in sent] == ["cost_attribution.parquet", "savings_ledger.parquet", "manifest.json"]
    with pytest.raises(ClientError) as refused:  # RGW checks the header: a body that does not match is refused
        s3.put_object(Bucket=target.bucket, Key="r1/2026-10/x", Body=b"abc",
                      ContentMD5=wanted["cost_attribution.parquet"])
    assert refused.value.response["Error"]["Code"] == "BadDigest"


def test_a_delete_marker_on_the_manifest_does_not_make_the_month_look_unarchived(
        s3: Any, target: S3ObjectLockTarget) -> None:
    first = archive_files(target, MONTH, "r1", month_files())
    s3.delete_object(Bucket=target.bucket, Key="r1/2026-10/manifest.json")  # allowed: a marker, no version goes
    with pytest.raises(ClientError):
        s3.get_object(Bucket=target.bucket, Key="r1/2026-10/manifest.json")
    assert target.months("r1") == ["2026-10"]
    before = _versions(s3, target.bucket)
    with pytest.raises(ArchiveRefused, match=r"^ARC001 archive 2026-10 of r1 is already at"):
        archive_files(target, MONTH, "r1", month_files(cost=2.0))
    again = archive_files(target, MONTH, "r1", month_files())
    assert again.action == "unchanged" and again.manifest == first.manifest
    assert _versions(s3, target.bucket) == before


def test_the_archive_identity_with_only_the_documented_policy_archives_and_cannot_delete_or_loosen_anything(
        s3: Any, target: S3ObjectLockTarget) -> None:
    """workload-b of the bed stands in for the archive identity; the orchestrator owns the bucket."""
    bed = ceph_env()
    ident = bed["identities"]["workload-b"]
    s3.put_bucket_policy(Bucket=target.bucket, Policy=json.dumps(
        archive_bucket_policy(target.bucket, ["arn:aws:iam:::user/workload-b"])))
    writer_client = archive_s3_client(bed["endpoint"], ident["access_key"], ident["secret_key"])
    writer = S3ObjectLockTarget(writer_client, target.bucket, RETENTION, clock=target.clock)
    writer.ensure_bucket()
    result = archive_files(writer, MONTH, "r1", month_files())
    assert result.action == "written" and writer.months("r1") == ["2026-10"]
    assert archive_files(writer, MONTH, "r1", month_files()).action == "unchanged"
    key = "r1/2026-10/savings_ledger.parquet"
    version = result.manifest["files"]["savings_ledger"]["version_id"]  # type: ignore[index]
    retention = writer_client.get_object_retention(Bucket=target.bucket, Key=key, VersionId=version)["Retention"]
    assert retention["Mode"] == "COMPLIANCE"
    refused = []
    for op, kwargs in (("delete_object", {"Key": key, "VersionId": version}),
                       ("delete_object", {"Key": key}),  # not even a delete marker
                       ("put_bucket_policy", {"Policy": json.dumps({"Version": "2012-10-17", "Statement": []})}),
                       ("put_object_lock_configuration", {"ObjectLockConfiguration": {"ObjectLockEnabled": "Enabled"}}),
                       ("delete_bucket", {})):
        with pytest.raises(ClientError) as denied:
            getattr(writer_client, op)(Bucket=target.bucket, **kwargs)
        refused.append((op, denied.value.response["Error"]["Code"]))
    assert refused == [("delete_object", "AccessDenied"), ("delete_object", "AccessDenied"),
                       ("put_bucket_policy", "AccessDenied"), ("put_object_lock_configuration", "AccessDenied"),
                       ("delete_bucket", "AccessDenied")]
