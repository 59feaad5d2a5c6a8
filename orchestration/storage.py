"""Checkpoint storage per workload from Ceph RGW (ADR-19, ADR-26): bucket sizes read through the RGW Admin Ops
API, turned into ``storage_usage`` rows (GiB-hours and the price per GiB-hour) the hourly attribution charges.

Each workload checkpoints into its own bucket under its own RGW identity (ADR-19), so a bucket's **owner** is
the workload: ``owners`` maps an owner uid to a workload name when they differ (a uid absent from it is the
workload's name itself); buckets of owners listed as ``None`` (the orchestrator's own, the finance archive)
are not charged to any workload. Size is RGW's ``size_actual`` (bytes allocated, what the cluster stores),
summed over a workload's buckets. The snapshot stands for the hour that just ended: the schedule reads it a
minute past the hour, before that hour's attribution runs (five past).

The production adapter (``RgwAdminOps``) signs ``GET /admin/bucket?stats=true`` with AWS SigV4 as RGW
expects; the identity needs the ``buckets=read`` admin capability. A test double (``StaticBuckets``) sits beside it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from .errors import StorageError

__all__ = ["GIB", "HOURS_PER_MONTH", "BucketSize", "BucketStats", "RgwAdminOps", "StaticBuckets", "StorageError",
           "parse_buckets", "storage_rows"]

GIB = 1024 ** 3
HOURS_PER_MONTH = Decimal(730)  # the rate card's month: 8,760 h / 12


@dataclass(frozen=True)
class BucketSize:
    bucket: str
    owner: str
    bytes: int


class BucketStats(Protocol):
    """Where bucket sizes come from: RGW's Admin Ops API in production, a fixed list in tests."""

    def buckets(self) -> list[BucketSize]:
        """Every bucket with its owner and allocated bytes."""


def parse_buckets(doc: Any) -> list[BucketSize]:
    """RGW's ``/admin/bucket?stats=true`` answer (a list of bucket objects) as sizes.

    Raises:
        StorageError: Not a list of bucket objects.
    """
    if not isinstance(doc, list):
        raise StorageError(f"RGW bucket stats: expected a list of buckets, got {type(doc).__name__}; check that the "
                           "identity has the buckets=read admin capability")
    out = []
    for b in doc:
        if not isinstance(b, dict) or "bucket" not in b:
            raise StorageError(f"RGW bucket stats: an entry is not a bucket object: {str(b)[:200]}")
        usage = b.get("usage") or {}
        size = sum(int((u or {}).get("size_actual", 0) or 0) for u in usage.values() if isinstance(u, dict))
        out.append(BucketSize(str(b["bucket"]), str(b.get("owner") or ""), size))
    return out


def storage_rows(buckets: Sequence[BucketSize], hour: datetime, eur_per_gib_month: Decimal,
                 owners: Mapping[str, str | None] | None = None) -> list[tuple[datetime, str, Decimal, Decimal]]:
    """``storage_usage`` rows for ``hour``: (hour, workload, GiB-hours, EUR per GiB-hour), one per workload."""
    owners = owners or {}
    per: dict[str, int] = defaultdict(int)
    for b in buckets:
        workload = owners.get(b.owner, b.owner)
        if workload:
            per[workload] += b.bytes
    rate = (eur_per_gib_month / HOURS_PER_MONTH).quantize(Decimal("0.000000001"))
    h = hour.replace(minute=0, second=0, microsecond=0, tzinfo=None)
    return [(h, w, (Decimal(n) / GIB).quantize(Decimal("0.000001")), rate) for w, n in sorted(per.items())]


class RgwAdminOps:
    """RGW's Admin Ops API, signed with SigV4 (botocore), through ``urllib``."""

    def __init__(self, endpoint: str, access_key: str, secret_key: str, region: str = "default",
                 timeout_s: float = 10.0) -> None:
        """The RGW endpoint (``http://host:port``) and an identity with the ``buckets=read`` capability."""
        self.endpoint, self.region, self.timeout_s = endpoint.rstrip("/"), region, timeout_s
        self.access_key, self.secret_key = access_key, secret_key

    def buckets(self) -> list[BucketSize]:
        """``GET /admin/bucket?stats=true&format=json``."""
        import urllib.error
        import urllib.request

        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        url = f"{self.endpoint}/admin/bucket?format=json&stats=true"
        req = AWSRequest(method="GET", url=url)
        S3SigV4Auth(Credentials(self.access_key, self.secret_key), "s3", self.region).add_auth(req)
        http = urllib.request.Request(url, headers=dict(req.headers.items()), method="GET")
        try:
            with urllib.request.urlopen(http, timeout=self.timeout_s) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            raise StorageError(f"RGW {url} answered {exc.code}: {exc.read()[:200]!r}; the identity needs the "
                               "buckets=read admin capability (radosgw-admin caps add)") from None
        except OSError as exc:
            raise StorageError(f"RGW {url} unreachable: {exc}") from None
        try:
            return parse_buckets(json.loads(body))
        except json.JSONDecodeError as exc:
            raise StorageError(f"RGW {url} answered something that is not JSON: {exc}") from None


@dataclass
class StaticBuckets:
    """A fixed answer (tests, and a region without RGW)."""

    sizes: list[BucketSize]

    def buckets(self) -> list[BucketSize]:
        """The sizes given."""
        return list(self.sizes)
