"""Checkpoint storage charged from RGW (ADR-19, ADR-26): the ``storage_usage`` asset reads bucket sizes through
the Admin Ops API of the real Ceph RGW test bed, writes them per workload (the bucket's owner), and the hourly
attribution charges them. The pure rules (owners, price per GiB-hour, a bad answer) run without the bed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from orchestration.storage import GIB, BucketSize, StorageError, parse_buckets, storage_rows
from tests.support.testbeds import CEPH_ENV

from .helpers import Stack

HOUR = datetime(2026, 9, 1, 7, tzinfo=UTC)


def test_bucket_sizes_become_gib_hours_per_workload_with_the_orchestrators_own_buckets_left_out() -> None:
    buckets = [BucketSize("ckpt-1", "etl", 2 * GIB), BucketSize("ckpt-2", "etl", GIB // 2),
               BucketSize("train-ckpt", "uid-7", GIB), BucketSize("archive", "orchestrator", 50 * GIB)]
    rows = storage_rows(buckets, HOUR.replace(minute=42), Decimal("0.0730"), {"uid-7": "train", "orchestrator": None})
    hour = HOUR.replace(tzinfo=None)
    assert rows == [(hour, "etl", Decimal("2.5"), Decimal("0.0001")), (hour, "train", Decimal(1), Decimal("0.0001"))]


def test_an_answer_that_is_not_bucket_stats_is_refused_with_the_capability_to_add() -> None:
    with pytest.raises(StorageError, match="buckets=read"):
        parse_buckets({"Code": "AccessDenied"})
    sizes = parse_buckets([{"bucket": "b", "owner": "w", "usage": {"rgw.main": {"size_actual": 4096},
                                                                      "rgw.multimeta": {"size_actual": 0}}}])
    assert sizes == [BucketSize("b", "w", 4096)]


@pytest.fixture
def rgw_bucket() -> Iterator[tuple[dict[str, Any], str, int]]:
    """A bucket of workload-a holding 3 MiB, removed afterwards."""
    from tests.workload.helpers import empty_bucket, identity_client

    if not CEPH_ENV.exists():
        pytest.fail(f"{CEPH_ENV} is missing: run deploy/testbed/ceph/up first")
    env: dict[str, Any] = json.loads(CEPH_ENV.read_text())
    s3 = identity_client(env, "workload-a")
    name = f"sco-storage-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name)
    size = 3 * 1024 * 1024
    s3.put_object(Bucket=name, Key="gen-1/shard-0", Body=b"\0" * size)
    yield env, name, size
    empty_bucket(s3, name)


@pytest.mark.testbed
def test_the_storage_asset_charges_rgw_bucket_sizes_to_the_owning_workload(
        stack: Stack, rgw_bucket: tuple[dict[str, Any], str, int]) -> None:
    from dagster import materialize

    from orchestration.backfill import read_range
    from orchestration.defs.costs.assets import storage_usage
    from orchestration.resources import RgwResource
    from orchestration.storage import RgwAdminOps

    env, bucket, size = rgw_bucket
    me = env["identities"]["orchestrator"]
    found = {b.bucket: b for b in RgwAdminOps(env["endpoint"], me["access_key"], me["secret_key"]).buckets()}
    assert found[bucket].owner == "workload-a" and found[bucket].bytes >= size
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)  # the hour just ended
    workload = f"etl-{uuid.uuid4().hex[:6]}"  # this run's own name: the session's ClickHouse is shared
    rgw = RgwResource(endpoint=env["endpoint"], access_key=me["access_key"], secret_key=me["secret_key"],
                      owners=json.dumps({"workload-a": workload, "workload-b": None}), eur_per_gib_month="0.0730")
    result = materialize([storage_usage], resources={**stack.resources(), "rgw": rgw},
                         partition_key=hour.strftime("%Y-%m-%d-%H:%M"))
    assert result.success
    ch = stack.ch()
    (gib_h, rate), = ch.rows("SELECT gib_hours, eur_per_gib_h FROM storage_usage FINAL WHERE workload = {w:String}",
                             {"w": workload})
    every = sum(b.bytes for b in found.values() if b.owner == "workload-a")
    assert Decimal(gib_h) == (Decimal(every) / GIB).quantize(Decimal("0.000001")) and Decimal(rate) == Decimal("0.0001")
    (inputs,) = read_range(ch, "r1", hour, hour + timedelta(hours=1))
    assert inputs.storage_eur[workload] == Decimal(gib_h) * Decimal(rate)  # what the hour's ledger line charges
