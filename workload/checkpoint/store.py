"""The object-store boundary of the checkpoint client.

A small ``ObjectStore`` protocol, the production adapter over boto3 (Ceph RGW, path-style S3) and an in-memory double
with the same semantics (incomplete multipart uploads are invisible until completed; SSE-C objects need the key to be
read).

Encryption is per workload (ADR-19): :class:`Encryption` is either SSE-C (the workload's own 256-bit key,
never stored by the platform) or SSE-KMS (the workload's key id in the KMS).
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import AccessDenied, NotFound, StoreError

__all__ = ["Encryption", "MemoryStore", "ObjectInfo", "ObjectStore", "S3Store", "s3_client"]


@dataclass(frozen=True)
class Encryption:
    """SSE-C (``customer_key``: 32 bytes) or SSE-KMS (``kms_key_id``); exactly one must be set."""

    kms_key_id: str | None = None
    customer_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.kms_key_id is None) == (self.customer_key is None):
            raise ValueError("Encryption needs exactly one of kms_key_id (SSE-KMS) or customer_key (SSE-C)")
        if self.customer_key is not None and len(self.customer_key) != 32:
            raise ValueError(f"an SSE-C key must be 32 bytes, got {len(self.customer_key)}; "
                             "generate one with os.urandom(32) and keep it in the workload's secret store")

    @property
    def mode(self) -> str:
        """``SSE-KMS`` or ``SSE-C``: which server-side encryption this is."""
        return "SSE-KMS" if self.kms_key_id else "SSE-C"

    def _ssec(self, prefix: str = "") -> dict[str, str]:
        assert self.customer_key is not None
        return {f"{prefix}SSECustomerAlgorithm": "AES256",
                f"{prefix}SSECustomerKey": base64.b64encode(self.customer_key).decode(),
                f"{prefix}SSECustomerKeyMD5": base64.b64encode(hashlib.md5(self.customer_key).digest()).decode()}

    def on_write(self) -> dict[str, str]:
        """Arguments for PutObject / CreateMultipartUpload / CopyObject (destination)."""
        if self.kms_key_id:
            return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id}
        return self._ssec()

    def on_part(self) -> dict[str, str]:
        """Arguments for UploadPart (SSE-C repeats the key on every part; SSE-KMS needs nothing)."""
        return {} if self.kms_key_id else self._ssec()

    def on_read(self) -> dict[str, str]:
        """Arguments for GetObject / HeadObject."""
        return {} if self.kms_key_id else self._ssec()

    def on_copy_source(self) -> dict[str, str]:
        """Arguments for CopyObject's source (SSE-C repeats the source key)."""
        return {} if self.kms_key_id else self._ssec("CopySource")


@dataclass(frozen=True)
class ObjectInfo:
    """An object's key and size."""

    key: str
    size: int


class ObjectStore(Protocol):
    """The S3 calls the checkpoint client and the output commit make."""

    def ensure_bucket(self, bucket: str) -> None:
        """Create ``bucket`` unless it exists."""
    def put_bucket_policy(self, bucket: str, policy: str) -> None:
        """Set the bucket's access policy (a JSON document)."""
    def put_lifecycle(self, bucket: str, rules: list[dict[str, Any]]) -> None:
        """Replace the bucket's lifecycle rules with ``rules``."""
    def get_lifecycle(self, bucket: str) -> list[dict[str, Any]]:
        """The bucket's lifecycle rules; raises ``NotFound`` when it has none."""
    def put(self, bucket: str, key: str, data: bytes, enc: Encryption) -> None:
        """Write ``data`` at ``key``, encrypted with ``enc``."""
    def get(self, bucket: str, key: str, enc: Encryption, byte_range: tuple[int, int] | None = None) -> bytes:
        """The object's bytes (``byte_range``: inclusive first and last byte); raises ``NotFound``."""
    def head(self, bucket: str, key: str, enc: Encryption) -> ObjectInfo | None:
        """The object's key and size, or None when there is none."""
    def list_objects(self, bucket: str, prefix: str) -> list[ObjectInfo]:
        """Every object under ``prefix``, by key."""
    def delete(self, bucket: str, keys: list[str]) -> None:
        """Delete ``keys`` (a missing key is no error)."""
    def copy(self, bucket: str, src: str, dst: str, enc: Encryption) -> None:
        """Copy ``src`` to ``dst`` in the bucket, server-side, with the same encryption."""
    def start_multipart(self, bucket: str, key: str, enc: Encryption) -> str:
        """Begin a multipart upload of ``key``; its upload id."""
    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, data: bytes,
                    enc: Encryption) -> str:
        """Upload part ``number`` of an upload; the part's ETag."""
    def complete_multipart(self, bucket: str, key: str, upload_id: str, etags: list[str]) -> None:
        """Assemble the uploaded parts (their ETags in order) into the object."""
    def abort_multipart(self, bucket: str, key: str, upload_id: str) -> None:
        """Abandon an upload and drop its parts."""
    def list_multipart(self, bucket: str, prefix: str) -> list[tuple[str, str]]:
        """The (key, upload id) of every incomplete upload under ``prefix``."""


def s3_client(endpoint: str, access_key: str, secret_key: str, region: str = "us-east-1",
              max_pool: int = 16) -> Any:
    """A boto3 S3 client for RGW: path-style addressing, SigV4, checksums only when required."""
    import boto3
    from botocore.config import Config

    cfg = Config(s3={"addressing_style": "path"}, signature_version="s3v4", max_pool_connections=max_pool,
                 retries={"max_attempts": 3, "mode": "standard"},
                 request_checksum_calculation="when_required", response_checksum_validation="when_required")
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name=region, config=cfg)


class S3Store:
    """The production adapter: any S3 API (Ceph RGW in production and in the test bed)."""

    def __init__(self, client: Any) -> None:
        self.s3 = client

    def _call(self, op: str, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        try:
            return getattr(self.s3, op)(**kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            where = f"{op} s3://{kwargs.get('Bucket', '')}/{kwargs.get('Key', '')}"
            if code in ("InvalidArgument", "400") and "SSECustomerKey" in kwargs:
                raise AccessDenied(f"{where}: the SSE-C key does not open this object (wrong workload key)") from exc
            if code in ("AccessDenied", "403", "Forbidden"):
                raise AccessDenied(f"{where}: access denied to this identity") from exc
            if code in ("NoSuchKey", "404", "NotFound", "NoSuchBucket", "NoSuchLifecycleConfiguration"):
                raise NotFound(f"{where}: {code}") from exc
            raise StoreError(f"{where}: {code or exc}") from exc

    def ensure_bucket(self, bucket: str) -> None:
        """Create ``bucket`` unless it exists."""
        from botocore.exceptions import ClientError

        try:
            self.s3.create_bucket(Bucket=bucket)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "BucketAlreadyOwnedByYou":
                return
            if code in ("AccessDenied", "BucketAlreadyExists"):
                raise AccessDenied(f"create bucket {bucket}: {code} (owned by another identity)") from exc
            raise StoreError(f"create bucket {bucket}: {code}") from exc

    def put_bucket_policy(self, bucket: str, policy: str) -> None:
        """Set the bucket's access policy (a JSON document)."""
        self._call("put_bucket_policy", Bucket=bucket, Policy=policy)

    def put_lifecycle(self, bucket: str, rules: list[dict[str, Any]]) -> None:
        """Replace the bucket's lifecycle rules with ``rules``."""
        self._call("put_bucket_lifecycle_configuration", Bucket=bucket, LifecycleConfiguration={"Rules": rules})

    def get_lifecycle(self, bucket: str) -> list[dict[str, Any]]:
        """The bucket's lifecycle rules; raises ``NotFound`` when it has none."""
        rules: list[dict[str, Any]] = self._call("get_bucket_lifecycle_configuration", Bucket=bucket)["Rules"]
        return rules

    def put(self, bucket: str, key: str, data: bytes, enc: Encryption) -> None:
        """Write ``data`` at ``key``, encrypted with ``enc``."""
        self._call("put_object", Bucket=bucket, Key=key, Body=data, **enc.on_write())

    def get(self, bucket: str, key: str, enc: Encryption, byte_range: tuple[int, int] | None = None) -> bytes:
        """The object's bytes (``byte_range``: inclusive first and last byte); raises ``NotFound``."""
        extra = {"Range": f"bytes={byte_range[0]}-{byte_range[1]}"} if byte_range else {}
        body: bytes = self._call("get_object", Bucket=bucket, Key=key, **enc.on_read(), **extra)["Body"].read()
        return body

    def head(self, bucket: str, key: str, enc: Encryption) -> ObjectInfo | None:
        """The object's key and size, or None when there is none."""
        try:
            resp = self._call("head_object", Bucket=bucket, Key=key, **enc.on_read())
        except NotFound:
            return None
        return ObjectInfo(key, int(resp["ContentLength"]))

    def list_objects(self, bucket: str, prefix: str) -> list[ObjectInfo]:
        """Every object under ``prefix``, by key."""
        out: list[ObjectInfo] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            resp = self._call("list_objects_v2", **kwargs)
            out.extend(ObjectInfo(o["Key"], int(o["Size"])) for o in resp.get("Contents", []))
            if not resp.get("IsTruncated"):
                return out
            token = resp["NextContinuationToken"]

    def delete(self, bucket: str, keys: list[str]) -> None:
        """Delete ``keys`` (a missing key is no error)."""
        for i in range(0, len(keys), 1000):
            chunk = keys[i:i + 1000]
            self._call("delete_objects", Bucket=bucket, Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})

    def copy(self, bucket: str, src: str, dst: str, enc: Encryption) -> None:
        """Server-side copy, or a read and re-write where the server cannot copy.

        Ceph RGW 16 answers NotImplemented for encrypted sources, so then the client re-reads and re-writes (ranged
        reads into a multipart upload above 64 MiB).
        """
        try:
            self._call("copy_object", Bucket=bucket, Key=dst, CopySource={"Bucket": bucket, "Key": src},
                       **enc.on_write(), **enc.on_copy_source())
            return
        except StoreError as exc:
            if "NotImplemented" not in str(exc):
                raise
        info = self.head(bucket, src, enc)
        if info is None:
            raise NotFound(f"copy: no source object {src}")
        chunk = 64 * 1024 * 1024
        if info.size <= chunk:
            self.put(bucket, dst, self.get(bucket, src, enc), enc)
            return
        upload_id = self.start_multipart(bucket, dst, enc)
        try:
            etags = [self.upload_part(bucket, dst, upload_id, n + 1,
                                      self.get(bucket, src, enc, (off, min(off + chunk, info.size) - 1)), enc)
                     for n, off in enumerate(range(0, info.size, chunk))]
            self.complete_multipart(bucket, dst, upload_id, etags)
        except BaseException:
            self.abort_multipart(bucket, dst, upload_id)
            raise

    def start_multipart(self, bucket: str, key: str, enc: Encryption) -> str:
        """Begin a multipart upload of ``key``; its upload id."""
        return str(self._call("create_multipart_upload", Bucket=bucket, Key=key, **enc.on_write())["UploadId"])

    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, data: bytes,
                    enc: Encryption) -> str:
        """Upload part ``number`` of an upload; the part's ETag."""
        resp = self._call("upload_part", Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                          Body=data, **enc.on_part())
        return str(resp["ETag"])

    def complete_multipart(self, bucket: str, key: str, upload_id: str, etags: list[str]) -> None:
        """Assemble the uploaded parts (their ETags in order) into the object."""
        parts = [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]
        self._call("complete_multipart_upload", Bucket=bucket, Key=key, UploadId=upload_id,
                   MultipartUpload={"Parts": parts})

    def abort_multipart(self, bucket: str, key: str, upload_id: str) -> None:
        """Abandon an upload and drop its parts."""
        self._call("abort_multipart_upload", Bucket=bucket, Key=key, UploadId=upload_id)

    def list_multipart(self, bucket: str, prefix: str) -> list[tuple[str, str]]:
        """The (key, upload id) of every incomplete upload under ``prefix``."""
        resp = self._call("list_multipart_uploads", Bucket=bucket, Prefix=prefix)
        return [(u["Key"], u["UploadId"]) for u in resp.get("Uploads", [])]


@dataclass
class _Obj:
    data: bytes
    enc: Encryption


class MemoryStore:
    """Test double with the semantics the client relies on; ``owner`` models a bucket owned by one identity."""

    def __init__(self) -> None:
        self.buckets: dict[str, dict[str, _Obj]] = {}
        self.uploads: dict[str, tuple[str, str, Encryption, dict[int, bytes]]] = {}
        self.lifecycle: dict[str, list[dict[str, Any]]] = {}
        self.policies: dict[str, str] = {}
        self.fail_puts: set[str] = set()  # keys whose PUT / multipart completion raises (fault injection)
        self._lock = threading.Lock()
        self._n = 0

    def _bucket(self, bucket: str) -> dict[str, _Obj]:
        if bucket not in self.buckets:
            raise NotFound(f"no bucket {bucket}")
        return self.buckets[bucket]

    def ensure_bucket(self, bucket: str) -> None:
        """Create ``bucket`` unless it exists."""
        self.buckets.setdefault(bucket, {})

    def put_bucket_policy(self, bucket: str, policy: str) -> None:
        """Set the bucket's access policy (a JSON document)."""
        self._bucket(bucket)
        self.policies[bucket] = policy

    def put_lifecycle(self, bucket: str, rules: list[dict[str, Any]]) -> None:
        """Replace the bucket's lifecycle rules with ``rules``."""
        self._bucket(bucket)
        self.lifecycle[bucket] = rules

    def get_lifecycle(self, bucket: str) -> list[dict[str, Any]]:
        """The bucket's lifecycle rules; raises ``NotFound`` when it has none."""
        if bucket not in self.lifecycle:
            raise NotFound(f"no lifecycle on {bucket}")
        return self.lifecycle[bucket]

    def put(self, bucket: str, key: str, data: bytes, enc: Encryption) -> None:
        """Write ``data`` at ``key``, encrypted with ``enc``."""
        if key in self.fail_puts:
            raise StoreError(f"injected failure writing {key}")
        with self._lock:
            self._bucket(bucket)[key] = _Obj(bytes(data), enc)

    def _readable(self, obj: _Obj, enc: Encryption, key: str) -> None:
        if obj.enc.customer_key is not None and obj.enc.customer_key != enc.customer_key:
            raise AccessDenied(f"{key}: SSE-C object needs its key")

    def get(self, bucket: str, key: str, enc: Encryption, byte_range: tuple[int, int] | None = None) -> bytes:
        """The object's bytes (``byte_range``: inclusive first and last byte); raises ``NotFound``."""
        obj = self._bucket(bucket).get(key)
        if obj is None:
            raise NotFound(f"{key}: NoSuchKey")
        self._readable(obj, enc, key)
        return obj.data if byte_range is None else obj.data[byte_range[0]:byte_range[1] + 1]

    def head(self, bucket: str, key: str, enc: Encryption) -> ObjectInfo | None:
        """The object's key and size, or None when there is none."""
        obj = self._bucket(bucket).get(key)
        return None if obj is None else ObjectInfo(key, len(obj.data))

    def list_objects(self, bucket: str, prefix: str) -> list[ObjectInfo]:
        """Every object under ``prefix``, by key."""
        items = sorted(self._bucket(bucket).items())
        return [ObjectInfo(k, len(o.data)) for k, o in items if k.startswith(prefix)]

    def delete(self, bucket: str, keys: list[str]) -> None:
        """Delete ``keys`` (a missing key is no error)."""
        with self._lock:
            for k in keys:
                self._bucket(bucket).pop(k, None)

    def copy(self, bucket: str, src: str, dst: str, enc: Encryption) -> None:
        """Copy ``src`` to ``dst`` in the bucket, server-side, with the same encryption."""
        data = self.get(bucket, src, enc)
        self.put(bucket, dst, data, enc)

    def start_multipart(self, bucket: str, key: str, enc: Encryption) -> str:
        """Begin a multipart upload of ``key``; its upload id."""
        with self._lock:
            self._n += 1
            upload_id = f"u{self._n}"
            self.uploads[upload_id] = (bucket, key, enc, {})
        return upload_id

    def upload_part(self, bucket: str, key: str, upload_id: str, number: int, data: bytes,
                    enc: Encryption) -> str:
        """Upload part ``number`` of an upload; the part's ETag."""
        with self._lock:
            self.uploads[upload_id][3][number] = bytes(data)
        return hashlib.md5(data).hexdigest()

    def complete_multipart(self, bucket: str, key: str, upload_id: str, etags: list[str]) -> None:
        """Assemble the uploaded parts (their ETags in order) into the object."""
        _, _, enc, parts = self.uploads.pop(upload_id)
        self.put(bucket, key, b"".join(parts[i] for i in sorted(parts)), enc)

    def abort_multipart(self, bucket: str, key: str, upload_id: str) -> None:
        """Abandon an upload and drop its parts."""
        self.uploads.pop(upload_id, None)

    def list_multipart(self, bucket: str, prefix: str) -> list[tuple[str, str]]:
        """The (key, upload id) of every incomplete upload under ``prefix``."""
        return [(k, u) for u, (b, k, _, _) in self.uploads.items() if b == bucket and k.startswith(prefix)]

    def keys(self, bucket: str) -> Iterator[str]:
        """The bucket's keys, sorted (a test's view)."""
        yield from sorted(self._bucket(bucket))

    def snapshot(self, bucket: str) -> Mapping[str, bytes]:
        """The bucket's objects as key -> bytes (a test's view)."""
        return {k: o.data for k, o in self._bucket(bucket).items()}
