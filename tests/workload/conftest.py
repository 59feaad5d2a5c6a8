"""Fixtures for the checkpoint tests against the real Ceph RGW test bed (deploy/testbed/ceph/up)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.testbeds import CEPH_ENV
from tests.workload.helpers import empty_bucket, identity_client
from workload.checkpoint import CheckpointClient, Encryption, S3Store


@pytest.fixture(scope="session")
def rgw() -> dict[str, Any]:
    if not CEPH_ENV.exists():
        pytest.fail(f"{CEPH_ENV} is missing: run deploy/testbed/ceph/up first")
    env: dict[str, Any] = json.loads(CEPH_ENV.read_text())
    return env


@pytest.fixture
def bucket_a(rgw: dict[str, Any]) -> Iterator[str]:
    """A fresh bucket owned by workload-a, removed afterwards."""
    name = f"sco-test-a-{uuid.uuid4().hex[:12]}"
    yield name
    empty_bucket(identity_client(rgw, "workload-a"), name)


@pytest.fixture
def client_a(rgw: dict[str, Any], bucket_a: str) -> CheckpointClient:
    store = S3Store(identity_client(rgw, "workload-a"))
    client = CheckpointClient(store, bucket_a, "workload-a",
                              Encryption(kms_key_id=rgw["identities"]["workload-a"]["kms_key_id"]),
                              part_size=5 * 1024 * 1024, concurrency=3)
    client.ensure_bucket(owner_arns=["arn:aws:iam:::user/workload-a"])
    return client
