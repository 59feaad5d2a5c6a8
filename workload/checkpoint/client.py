"""Checkpoint generations in the workload's own bucket (ADR-18, ADR-19).

A generation is a set of named objects under ``<prefix>/data/<generation>/``, each written as a multipart
upload (parts in parallel, SHA-256 computed on the way), followed by **one manifest written last** at
``<prefix>/manifests/<generation>.json``. A generation without a manifest does not exist for restore: a
writer killed mid-upload leaves an incomplete multipart upload (invisible to readers, aborted by the
lifecycle rule) or objects without a manifest (ignored, then pruned). Restore takes the newest generation
whose manifest is complete and whose objects are all present with the recorded sizes.

At most ``keep`` (3) generations are kept and nothing older than ``max_age`` (7 days): the client prunes
after every successful write, and :meth:`CheckpointClient.install_lifecycle` installs the bucket rule that
enforces the age limit and aborts orphaned multipart uploads even when no client runs again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .errors import CheckpointError, NotFound, StoreError
from .store import Encryption, ObjectStore

__all__ = ["MANIFEST_FORMAT", "CheckpointClient", "Generation", "Source", "WriteResult", "lifecycle_rules"]

MANIFEST_FORMAT = "sco-checkpoint/v1"
MiB = 1024 * 1024
Source = bytes | Path
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Generation:
    """One checkpoint generation as its manifest describes it: number, time, step and objects."""

    number: int
    created_at: datetime
    step: int | None
    objects: tuple[dict[str, Any], ...]
    metadata: Mapping[str, Any]

    @property
    def size(self) -> int:
        """The generation's total size in bytes (the sum of its objects)."""
        return sum(int(o["size"]) for o in self.objects)


@dataclass(frozen=True)
class WriteResult:
    """What one write did: the generation written, its seconds and the generations pruned."""

    generation: Generation
    seconds: float
    pruned: tuple[int, ...]

    @property
    def mib_s(self) -> float:
        """The write's throughput in MiB/s (infinite for a write that took no time)."""
        return self.generation.size / MiB / self.seconds if self.seconds > 0 else float("inf")


def lifecycle_rules(prefix: str, max_age_days: int = 7, abort_days: int = 1) -> list[dict[str, Any]]:
    """The bucket rule of ADR-19: expire anything under ``prefix`` older than ``max_age_days``.

    And abort multipart uploads left incomplete (a writer killed mid-upload) after ``abort_days``.
    """
    return [{"ID": f"sco-retention-{prefix.strip('/').replace('/', '-') or 'all'}", "Status": "Enabled",
             "Filter": {"Prefix": prefix}, "Expiration": {"Days": max_age_days},
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": abort_days}}]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class CheckpointClient:
    """Writes, lists, restores and prunes one workload's checkpoint generations in its bucket."""

    def __init__(self, store: ObjectStore, bucket: str, workload: str, encryption: Encryption, *,
                 prefix: str = "checkpoints", keep: int = 3, max_age: timedelta = timedelta(days=7),
                 part_size: int = 64 * MiB, concurrency: int = 4, clock: Clock = _utcnow) -> None:
        if part_size < 5 * MiB:
            raise ValueError(f"part_size {part_size} is below the S3 minimum of 5 MiB")
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.store, self.bucket, self.workload, self.enc = store, bucket, workload, encryption
        self.prefix = prefix.strip("/") + "/"
        self.keep, self.max_age, self.part_size, self.concurrency = keep, max_age, part_size, concurrency
        self.clock = clock
        self._last_number: int | None = None

    # --- keys ------------------------------------------------------------------------------------------
    def data_prefix(self, number: int) -> str:
        """The key prefix of generation ``number``'s data objects."""
        return f"{self.prefix}data/{number:010d}/"

    def manifest_key(self, number: int) -> str:
        """The key of generation ``number``'s manifest."""
        return f"{self.prefix}manifests/{number:010d}.json"

    # --- bucket set-up ---------------------------------------------------------------------------------
    def owner_policy(self, owner_arns: list[str]) -> str:
        """A bucket policy granting the workload's identity (and only it) access (ADR-19)."""
        resources = [f"arn:aws:s3:::{self.bucket}", f"arn:aws:s3:::{self.bucket}/*"]
        return json.dumps({"Version": "2012-10-17", "Statement": [
            {"Sid": "WorkloadOnly", "Effect": "Allow", "Principal": {"AWS": owner_arns},
             "Action": ["s3:*"], "Resource": resources}]})

    def ensure_bucket(self, owner_arns: list[str] | None = None) -> None:
        """Create the bucket (owned by this identity), restrict it to the owner and install the lifecycle."""
        self.store.ensure_bucket(self.bucket)
        if owner_arns:
            self.store.put_bucket_policy(self.bucket, self.owner_policy(owner_arns))
        self.install_lifecycle()

    def install_lifecycle(self) -> None:
        """Merge our rule into the bucket's lifecycle configuration (other prefixes' rules are kept)."""
        mine = lifecycle_rules(self.prefix, max(1, self.max_age.days))
        try:
            existing = self.store.get_lifecycle(self.bucket)
        except NotFound:
            existing = []
        ids = {r["ID"] for r in mine}
        self.store.put_lifecycle(self.bucket, [r for r in existing if r.get("ID") not in ids] + mine)

    # --- write -----------------------------------------------------------------------------------------
    def _seen_numbers(self) -> list[int]:
        numbers: set[int] = set()
        for info in self.store.list_objects(self.bucket, self.prefix):
            rest = info.key[len(self.prefix):]
            part = rest.split("/")[1] if "/" in rest else ""
            part = part.removesuffix(".json")
            if part.isdigit():
                numbers.add(int(part))
        for key, _ in self.store.list_multipart(self.bucket, self.prefix + "data/"):
            part = key[len(self.prefix + "data/"):].split("/")[0]
            if part.isdigit():
                numbers.add(int(part))
        return sorted(numbers)

    def next_number(self) -> int:
        """One above every generation number seen, complete or not.

        So a new write never mixes with an orphan of a killed writer. A workload has one writer at a time (the running
        unit): after its first write a process counts on from its own last number instead of listing the bucket again.
        """
        if self._last_number is not None:  # this process is the workload's only writer: no listing needed
            return self._last_number + 1
        seen = self._seen_numbers()
        return (seen[-1] + 1) if seen else 1

    def write(self, sources: Mapping[str, Source], *, step: int | None = None,
              metadata: Mapping[str, Any] | None = None,
              on_part: Callable[[str, int], None] | None = None, prune: bool = True) -> WriteResult:
        """Write one generation: every object as a multipart upload, then the manifest.

        One PUT when an object fits in one part. Raises :class:`CheckpointError` (and leaves no manifest) when anything
        fails. With ``prune=False`` retention is left for :meth:`prune` (the final write prunes after the lease is
        released, to keep the drain path short).
        """
        if not sources:
            raise CheckpointError("a checkpoint generation needs at least one object")
        for name in sources:
            if not name or name.startswith("/") or ".." in name.split("/"):
                raise CheckpointError(f"object name {name!r} must be a relative path without '..'")
        started = time.monotonic()
        number = self.next_number()
        self._last_number = number
        objects = []
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="sco-ckpt") as pool:
            for name in sorted(sources):
                objects.append(self._upload(pool, number, name, sources[name], on_part))
        created = self.clock()
        manifest = {"format": MANIFEST_FORMAT, "workload": self.workload, "generation": number,
                    "created_at": created.isoformat(), "step": step, "metadata": dict(metadata or {}),
                    "objects": objects, "encryption": self.enc.mode}
        self.store.put(self.bucket, self.manifest_key(number), json.dumps(manifest, sort_keys=True).encode(),
                       self.enc)
        gen = Generation(number, created, step, tuple(objects), dict(metadata or {}))
        pruned = self.prune(current=number) if prune else []
        return WriteResult(gen, time.monotonic() - started, tuple(pruned))

    def _upload(self, pool: ThreadPoolExecutor, number: int, name: str, source: Source,
                on_part: Callable[[str, int], None] | None) -> dict[str, Any]:
        key = self.data_prefix(number) + name
        size_hint = len(source) if isinstance(source, bytes) else Path(source).stat().st_size
        if size_hint <= self.part_size:  # one part: a single PUT is as atomic and saves two round trips
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            self.store.put(self.bucket, key, data, self.enc)
            if on_part is not None:
                on_part(name, 1)
            return {"name": name, "key": key, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                    "parts": 1}
        upload_id = self.store.start_multipart(self.bucket, key, self.enc)
        digest = hashlib.sha256()
        size = 0
        slots = threading.BoundedSemaphore(self.concurrency)
        futures: list[Future[str]] = []

        def send(n: int, chunk: bytes) -> str:
            try:
                etag = self.store.upload_part(self.bucket, key, upload_id, n, chunk, self.enc)
                if on_part is not None:
                    on_part(name, n)
                return etag
            finally:
                slots.release()

        try:
            for n, chunk in enumerate(_chunks(source, self.part_size), start=1):
                digest.update(chunk)
                size += len(chunk)
                slots.acquire()
                futures.append(pool.submit(send, n, chunk))
            etags = [f.result() for f in futures]
            self.store.complete_multipart(self.bucket, key, upload_id, etags)
        except BaseException:
            for f in futures:
                f.cancel()
            with contextlib.suppress(StoreError):  # otherwise the lifecycle rule aborts it
                self.store.abort_multipart(self.bucket, key, upload_id)
            raise
        return {"name": name, "key": key, "size": size, "sha256": digest.hexdigest(), "parts": len(futures)}

    # --- read ------------------------------------------------------------------------------------------
    def _manifest(self, number: int) -> Generation | None:
        try:
            raw = json.loads(self.store.get(self.bucket, self.manifest_key(number), self.enc))
        except (NotFound, ValueError):
            return None
        if raw.get("format") != MANIFEST_FORMAT or raw.get("generation") != number:
            return None
        return Generation(number, datetime.fromisoformat(raw["created_at"]), raw.get("step"),
                          tuple(raw.get("objects", [])), raw.get("metadata", {}))

    def manifests(self) -> list[int]:
        """The numbers of every manifest in the bucket, ascending (complete or not)."""
        out = []
        for info in self.store.list_objects(self.bucket, self.prefix + "manifests/"):
            stem = info.key.rsplit("/", 1)[-1].removesuffix(".json")
            if stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def generations(self) -> list[Generation]:
        """Complete generations, newest first: manifest present and every object present at its size."""
        present = {i.key: i.size for i in self.store.list_objects(self.bucket, self.prefix + "data/")}
        out = []
        for number in reversed(self.manifests()):
            gen = self._manifest(number)
            if gen is not None and all(present.get(o["key"]) == o["size"] for o in gen.objects):
                out.append(gen)
        return out

    def latest(self) -> Generation | None:
        """The newest complete generation, or None when there is none."""
        gens = self.generations()
        return gens[0] if gens else None

    def read(self, gen: Generation, name: str) -> bytes:
        """One object of a generation, checked against its manifest's SHA-256; raises on a mismatch."""
        obj = next((o for o in gen.objects if o["name"] == name), None)
        if obj is None:
            raise NotFound(f"generation {gen.number} has no object {name!r}")
        data = self.store.get(self.bucket, obj["key"], self.enc)
        if hashlib.sha256(data).hexdigest() != obj["sha256"]:
            raise CheckpointError(f"{obj['key']}: checksum mismatch; the object was altered after its manifest")
        return data

    def restore(self, dest: Path, generation: Generation | None = None) -> Generation | None:
        """Download the newest complete generation (or ``generation``) into ``dest``; None when there is none."""
        gen = generation or self.latest()
        if gen is None:
            return None
        dest.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="sco-restore") as pool:
            for obj in gen.objects:
                self._download(pool, obj, dest / obj["name"])
        return gen

    def _download(self, pool: ThreadPoolExecutor, obj: Mapping[str, Any], path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        size = int(obj["size"])
        fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        try:
            def fetch(offset: int) -> None:
                end = min(offset + self.part_size, size) - 1
                os.pwrite(fd, self.store.get(self.bucket, obj["key"], self.enc, (offset, end)), offset)

            for f in [pool.submit(fetch, off) for off in range(0, size, self.part_size)]:
                f.result()
        finally:
            os.close(fd)
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(8 * MiB), b""):
                digest.update(chunk)
        if digest.hexdigest() != obj["sha256"]:
            raise CheckpointError(f"{obj['key']}: checksum mismatch after restore; try the previous generation")

    # --- retention -------------------------------------------------------------------------------------
    def prune(self, current: int | None = None) -> list[int]:
        """Keep the newest ``keep`` complete generations younger than ``max_age``; drop the rest.

        Also any manifest-less leftovers older than ``current`` (a killed writer's objects and uploads).
        """
        now = self.clock()
        complete = self.generations()
        kept = {g.number for g in complete[:self.keep] if now - g.created_at <= self.max_age}
        doomed = {g.number for g in complete} - kept
        if current is not None:
            doomed |= {n for n in self._seen_numbers() if n < current and n not in kept}
        for number in sorted(doomed):
            keys = [i.key for i in self.store.list_objects(self.bucket, self.data_prefix(number))]
            for key, upload_id in self.store.list_multipart(self.bucket, self.data_prefix(number)):
                self.store.abort_multipart(self.bucket, key, upload_id)
            self.store.delete(self.bucket, [self.manifest_key(number), *keys])
        return sorted(doomed)


def _chunks(source: Source, size: int) -> Any:
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        if len(view) == 0:
            yield b""
        for i in range(0, len(view), size):
            yield bytes(view[i:i + size])
        return
    with Path(source).open("rb") as fh:
        first = True
        while True:
            chunk = fh.read(size)
            if not chunk and not first:
                return
            first = False
            yield chunk
            if len(chunk) < size:
                return
