"""Fixtures for the checkpoint tests against the real Ceph RGW test bed (deploy/testbed/ceph/up)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.testbeds import CEPH_ENV
from workload.checkpoint import CheckpointClient, Encryption, S3Store, s3_client


@pytest.fixture(scope="session")
def rgw() -> dict[str, Any]:
    if not CEPH_ENV.exists():
        pytest.fail(f"{CEPH_ENV} is missing: run deploy/testbed/ceph/up first")
    env: dict[str, Any] = json.loads(CEPH_ENV.read_text())
    return env


def identity_client(rgw: dict[str, Any], who: str) -> Any:
    ident = rgw["identities"][who]
    return s3_client(rgw["endpoint"], ident["access_key"], ident["secret_key"])


def workload_env(rgw: dict[str, Any], who: str, bucket: str) -> dict[str, str]:
    """The environment a launcher gives a workload's process (workload.checkpoint.config)."""
    ident = rgw["identities"][who]
    return {**os.environ, "SCO_CKPT_ENDPOINT": rgw["endpoint"], "SCO_CKPT_BUCKET": bucket,
            "SCO_CKPT_WORKLOAD": who, "AWS_ACCESS_KEY_ID": ident["access_key"],
            "AWS_SECRET_ACCESS_KEY": ident["secret_key"], "SCO_CKPT_KMS_KEY_ID": ident["kms_key_id"]}


def _empty_bucket(s3: Any, bucket: str) -> None:
    from botocore.exceptions import ClientError

    try:
        for up in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
        while True:
            keys = [{"Key": o["Key"]} for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
            if not keys:
                break
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        s3.delete_bucket(Bucket=bucket)
    except ClientError:
        pass


@pytest.fixture
def bucket_a(rgw: dict[str, Any]) -> Iterator[str]:
    """A fresh bucket owned by workload-a, removed afterwards."""
    name = f"sco-test-a-{uuid.uuid4().hex[:12]}"
    yield name
    _empty_bucket(identity_client(rgw, "workload-a"), name)


@pytest.fixture
def client_a(rgw: dict[str, Any], bucket_a: str) -> CheckpointClient:
    store = S3Store(identity_client(rgw, "workload-a"))
    client = CheckpointClient(store, bucket_a, "workload-a",
                              Encryption(kms_key_id=rgw["identities"]["workload-a"]["kms_key_id"]),
                              part_size=5 * 1024 * 1024, concurrency=3)
    client.ensure_bucket(owner_arns=["arn:aws:iam:::user/workload-a"])
    return client
