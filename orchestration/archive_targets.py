"""Where the monthly finance archive is written (ADR-25): one protocol, two adapters side by side.

``LocalDirectoryTarget`` is the demo's: files under ``<dir>/<region>/<YYYY-MM>/`` made read-only (chmod 444),
the nearest local stand-in for a lock. ``S3ObjectLockTarget`` is production's: a bucket created with Object
Lock (versioning implied), every object put in COMPLIANCE mode with a retain-until date ``retention`` ahead
and a Content-MD5, keys ``<region>/<YYYY-MM>/<file>``; a put returns the object's version id, which the
manifest pins. Ceph RGW (16.2 on the test bed) enforces COMPLIANCE: deleting a locked version, shortening
its retention or switching it to GOVERNANCE is AccessDenied until the date passes.

Object Lock protects versions, not keys: a later PUT on the same key adds a version on top (RGW ignores
``If-None-Match``). What keeps a month from being replaced is ``archive.decide`` reading the manifest first,
and the manifest naming the locked version of every file.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlparse

from .errors import ArchiveBucketUnlocked, ArchiveConfigError, ArchiveStoreError

__all__ = ["ARCHIVE_IDENTITY_ACTIONS", "DEFAULT_RETENTION", "ArchiveTarget", "LocalDirectoryTarget",
           "S3ObjectLockTarget", "archive_bucket_policy", "archive_s3_client", "target_for"]

DEFAULT_RETENTION = timedelta(days=7 * 365)  # ADR-25: cost attribution is kept seven years
# what the archive identity needs, and nothing that deletes, bypasses a lock or changes the bucket
ARCHIVE_IDENTITY_ACTIONS = ("s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketObjectLockConfiguration",
                            "s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectRetention", "s3:PutObject",
                            "s3:PutObjectRetention")
_MONTH_MANIFEST = re.compile(r"^(?P<month>\d{4}-\d{2})/manifest\.json$")


class ArchiveTarget(Protocol):
    """Keys are ``<region>/<YYYY-MM>/<file>``; ``put`` returns the stored version's id (None: unversioned)."""

    def where(self, prefix: str) -> str:
        """The location of ``prefix`` an operator can open (a directory or an ``s3://`` URL)."""
        ...

    def read(self, key: str, version: str | None = None) -> bytes | None:
        """The object's bytes (that version when given), None when the key does not exist."""
        ...

    def put(self, key: str, data: bytes, sha256: str) -> str | None:
        """Write ``key`` (its SHA-256 recorded beside it), locked against change; its version id, if any."""
        ...

    def months(self, region: str) -> list[str]:
        """The region's archived months (``YYYY-MM`` with a manifest), oldest first."""
        ...


class LocalDirectoryTarget:
    """The demo's archive: a directory tree, each file chmod 444 once written."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def where(self, prefix: str) -> str:
        """Where ``prefix`` lives: the directory's path."""
        return str(self.root / prefix)

    def read(self, key: str, version: str | None = None) -> bytes | None:
        """The file's bytes, or None when there is none (a directory keeps no versions)."""
        path = self.root / key
        return path.read_bytes() if path.is_file() else None

    def put(self, key: str, data: bytes, sha256: str) -> str | None:
        """Write the file and make it read-only; None (a directory keeps no versions)."""
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():  # files of a run that stopped before its manifest
            path.chmod(0o644)
        path.write_bytes(data)
        path.chmod(0o444)
        return None

    def months(self, region: str) -> list[str]:
        """The region's archived months (``YYYY-MM`` with a manifest), oldest first."""
        return sorted(p.name for p in (self.root / region).glob("????-??") if (p / "manifest.json").is_file())


def archive_s3_client(endpoint: str = "", access_key: str = "", secret_key: str = "") -> Any:
    """A boto3 S3 client for RGW (path-style, SigV4, checksums only when required, as the checkpoint client):
    empty keys fall back to boto3's own chain (``AWS_ACCESS_KEY_ID``..., ``~/.aws``), an empty endpoint to
    ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``."""
    import boto3
    from botocore.config import Config

    cfg = Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                 retries={"max_attempts": 3, "mode": "standard"},
                 request_checksum_calculation="when_required", response_checksum_validation="when_required")
    keys = {"aws_access_key_id": access_key, "aws_secret_access_key": secret_key} if access_key else {}
    return boto3.client("s3", endpoint_url=endpoint or None, region_name="us-east-1", config=cfg, **keys)


class S3ObjectLockTarget:
    """The production archive: an S3 bucket with Object Lock on Ceph RGW. ``clock`` is the wall clock the
    retain-until dates are computed from (RGW compares them to its own); tests inject it."""

    def __init__(self, client: Any, bucket: str, retention: timedelta = DEFAULT_RETENTION,
                 mode: Literal["COMPLIANCE", "GOVERNANCE"] = "COMPLIANCE",
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        if retention <= timedelta(0):
            raise ArchiveConfigError(f"archive retention {retention} is not positive: give a retention in days "
                                     f"(ADR-25 keeps cost attribution {DEFAULT_RETENTION.days} days)")
        self.s3, self.bucket, self.retention, self.mode, self.clock = client, bucket, retention, mode, clock

    def _named(self, op: str, key: str, exc: Exception) -> ArchiveStoreError:
        """``exc`` (a botocore error) as the error an operator reads: the call, the object, the code, the fix."""
        err = getattr(exc, "response", {}).get("Error", {})
        if err:
            return ArchiveStoreError(
                f"archive {op} on s3://{self.bucket}/{key} refused: {err.get('Code')} ({err.get('Message', '')}); "
                "check the archive identity's permissions (docs/operations.md, finance archive)")
        return ArchiveStoreError(f"archive {op} on s3://{self.bucket}/{key} failed: {exc}; check "
                                 "SCO_ARCHIVE_ENDPOINT and the SCO_ARCHIVE_* credentials")

    def _call(self, op: str, key: str = "", **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.s3, op)(Bucket=self.bucket, **({"Key": key} if key else {}), **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise self._named(op, key, exc) from exc

    def ensure_bucket(self, create: bool = False) -> None:
        """The bucket exists with Object Lock enabled; with ``create``, a missing one is created with it."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.s3.head_bucket(Bucket=self.bucket)
        except (ClientError, BotoCoreError) as exc:
            if str(getattr(exc, "response", {}).get("Error", {}).get("Code")) not in ("404", "NoSuchBucket"):
                raise self._named("head_bucket", "", exc) from exc
            if not create:
                raise ArchiveBucketUnlocked(
                    f"archive bucket {self.bucket!r} does not exist: create it with Object Lock enabled "
                    f"(s3api create-bucket --object-lock-enabled-for-bucket, docs/operations.md)") from exc
            self._call("create_bucket", ObjectLockEnabledForBucket=True)
        try:
            conf = self.s3.get_object_lock_configuration(Bucket=self.bucket)
        except ClientError as exc:
            conf = {"error": exc.response.get("Error", {}).get("Code")}
        if conf.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") != "Enabled":
            raise ArchiveBucketUnlocked(
                f"archive bucket {self.bucket!r} has no Object Lock ({conf.get('error') or 'not enabled'}): "
                "Object Lock can only be enabled when a bucket is created; create a new bucket with "
                "--object-lock-enabled-for-bucket and point archive_url at it")

    def where(self, prefix: str) -> str:
        """Where ``prefix`` lives: its ``s3://bucket/prefix`` URL."""
        return f"s3://{self.bucket}/{prefix}"

    def read(self, key: str, version: str | None = None) -> bytes | None:
        """The latest version's bytes; when a delete marker hides the key, the newest version under it (a month
        whose manifest was "deleted" is still archived: its versions are locked)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            got = self.s3.get_object(Bucket=self.bucket, Key=key, **({"VersionId": version} if version else {}))
        except (ClientError, BotoCoreError) as exc:
            if str(getattr(exc, "response", {}).get("Error", {}).get("Code")) not in ("NoSuchKey", "404"):
                raise self._named("get_object", key, exc) from exc
            hidden = None if version else self._newest_version(key)
            return self.read(key, hidden) if hidden else None
        data: bytes = got["Body"].read()
        return data

    def _newest_version(self, key: str) -> str | None:
        listed = self._call("list_object_versions", Prefix=key)
        versions = [v for v in listed.get("Versions", []) if v["Key"] == key]
        newest = max(versions, key=lambda v: v["LastModified"], default=None)
        return str(newest["VersionId"]) if newest else None

    def put(self, key: str, data: bytes, sha256: str) -> str | None:
        """Put the object under Object Lock retention, its MD5 checked by RGW; its version id."""
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        got = self._call("put_object", key, Body=data, ContentMD5=md5, Metadata={"sha256": sha256},
                         ObjectLockMode=self.mode, ObjectLockRetainUntilDate=self.clock() + self.retention)
        version = got.get("VersionId")
        return str(version) if version else None

    def months(self, region: str) -> list[str]:
        """The region's archived months (``YYYY-MM`` with a manifest version), oldest first."""
        from botocore.exceptions import BotoCoreError, ClientError

        found: list[str] = []
        try:
            objects = [o for page in self.s3.get_paginator("list_object_versions").paginate(
                Bucket=self.bucket, Prefix=f"{region}/") for o in page.get("Versions", [])]
        except (ClientError, BotoCoreError) as exc:
            raise self._named("list_object_versions", f"{region}/", exc) from exc
        for obj in objects:
            m = _MONTH_MANIFEST.match(str(obj["Key"])[len(region) + 1:])
            if m:
                found.append(m["month"])
        return sorted(set(found))


def archive_bucket_policy(bucket: str, identity_arns: list[str]) -> dict[str, object]:
    """The bucket policy the bucket's owner sets for the archive identity (docs/operations.md)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": identity_arns}, "Action": list(ARCHIVE_IDENTITY_ACTIONS),
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}


def target_for(url: str, directory: str, retention_days: int = DEFAULT_RETENTION.days, *,
               environ: Mapping[str, str] | None = None, create_bucket: bool = False) -> ArchiveTarget:
    """The archive the settings name: ``s3://bucket`` (endpoint and the archive identity's keys from
    ``SCO_ARCHIVE_ENDPOINT``, ``SCO_ARCHIVE_ACCESS_KEY``, ``SCO_ARCHIVE_SECRET_KEY``; unset keys: boto3's
    chain), else the local ``directory``. An S3 bucket is checked for Object Lock before anything is read."""
    if not url:
        return LocalDirectoryTarget(Path(directory))
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc or parsed.path.strip("/"):
        raise ArchiveConfigError(f"archive_url {url!r} is not s3://BUCKET: give the bucket alone (the keys are "
                                 "<region>/<YYYY-MM>/<file>), or leave archive_url empty for archive_dir")
    if retention_days <= 0:
        raise ArchiveConfigError(f"archive_retention_days {retention_days} is not positive: give the days a "
                                 f"month stays locked (default {DEFAULT_RETENTION.days}, seven years)")
    env = environ or {}
    client = archive_s3_client(env.get("SCO_ARCHIVE_ENDPOINT", ""), env.get("SCO_ARCHIVE_ACCESS_KEY", ""),
                               env.get("SCO_ARCHIVE_SECRET_KEY", ""))
    target = S3ObjectLockTarget(client, parsed.netloc, timedelta(days=retention_days))
    target.ensure_bucket(create=create_bucket)
    return target
