"""Helpers for the checkpoint tests against the Ceph RGW test bed (the fixtures are in conftest.py)."""

from __future__ import annotations

import os
from typing import Any

from workload.checkpoint import s3_client

__all__ = ["empty_bucket", "identity_client", "workload_env"]


def identity_client(rgw: dict[str, Any], who: str) -> Any:
    ident = rgw["identities"][who]
    return s3_client(rgw["endpoint"], ident["access_key"], ident["secret_key"])


def workload_env(rgw: dict[str, Any], who: str, bucket: str) -> dict[str, str]:
    """The environment a launcher gives a workload's process (workload.checkpoint.config)."""
    ident = rgw["identities"][who]
    return {**os.environ, "SCO_CKPT_ENDPOINT": rgw["endpoint"], "SCO_CKPT_BUCKET": bucket,
            "SCO_CKPT_WORKLOAD": who, "AWS_ACCESS_KEY_ID": ident["access_key"],
            "AWS_SECRET_ACCESS_KEY": ident["secret_key"], "SCO_CKPT_KMS_KEY_ID": ident["kms_key_id"]}


def empty_bucket(s3: Any, bucket: str) -> None:
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
