"""Checkpoint write throughput to Ceph RGW against raw PUT throughput on the same store (ADR-19 seed target:
a 2 GB final write in <= 45 s).

    .venv/bin/python -m bench.checkpoint_rgw [--size-gib 2] [--rounds 3]

Needs the Ceph test bed (deploy/testbed/ceph/up; its memstore OSD is sized by SCO_CEPH_MEMSTORE_GIB, 6 GiB by
default, so one 2 GiB object fits with room to spare; objects are deleted and RGW's garbage collector is run
between rounds). Per round, alternating, on the same bytes with the same SSE-KMS key:

* baseline: one raw ``PutObject`` of the whole state (a single stream, what a naive client does);
* baseline: boto3's managed multipart transfer (``upload_file``, same part size and concurrency);
* the checkpoint client: a generation (multipart parts in parallel, SHA-256 on the way, manifest last).

It also restores the generation (ranged parallel GETs + SHA-256 check). Figures: median and worst round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals

MiB = 1024 * 1024
TESTBED = os.environ.get("SCO_CEPH_TESTBED_DIR") or Path(__file__).resolve().parents[1] / ".sco" / "testbed" / "ceph"
ENV = Path(TESTBED) / "env.json"


def _gc(conf: str) -> None:
    subprocess.run(["radosgw-admin", "-c", conf, "gc", "process", "--include-all"], capture_output=True,
                   check=False, timeout=300)


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    from boto3.s3.transfer import TransferConfig

    from workload.checkpoint import CheckpointClient, Encryption, S3Store, s3_client

    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint_rgw")
    parser.add_argument("--size-gib", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--part-mib", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    if not ENV.exists():
        raise SystemExit(f"{ENV} missing: run deploy/testbed/ceph/up first")
    env: dict[str, Any] = json.loads(ENV.read_text())
    ident = env["identities"]["workload-a"]
    s3 = s3_client(env["endpoint"], ident["access_key"], ident["secret_key"], max_pool=args.concurrency + 4)
    enc = Encryption(kms_key_id=ident["kms_key_id"])
    bucket = f"sco-bench-{uuid.uuid4().hex[:8]}"
    size = int(args.size_gib * 1024 * MiB)
    client = CheckpointClient(S3Store(s3), bucket, "workload-a", enc, part_size=args.part_mib * MiB,
                              concurrency=args.concurrency, keep=1)
    client.ensure_bucket()
    transfer = TransferConfig(multipart_threshold=args.part_mib * MiB, multipart_chunksize=args.part_mib * MiB,
                              max_concurrency=args.concurrency)
    results: dict[str, list[float]] = {"raw single PUT": [], "raw boto3 multipart": [], "checkpoint write": [],
                                       "checkpoint restore": []}
    with tempfile.TemporaryDirectory(prefix="sco-bench-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        state = Path(d) / "state.bin"
        with state.open("wb") as fh:
            for _ in range(0, size, 64 * MiB):
                fh.write(os.urandom(min(64 * MiB, size - fh.tell())))
        print(f"state: {size / MiB:.0f} MiB in {state} (memstore {env.get('memstore_gib')} GiB); "
              f"{args.rounds} rounds, part {args.part_mib} MiB, concurrency {args.concurrency}, SSE-KMS")
        for r in range(args.rounds):
            t0 = time.monotonic()
            with state.open("rb") as fh:
                s3.put_object(Bucket=bucket, Key="raw/state.bin", Body=fh, ContentLength=size, **enc.on_write())
            results["raw single PUT"].append(time.monotonic() - t0)
            s3.delete_object(Bucket=bucket, Key="raw/state.bin")
            _gc(env["conf"])
            t0 = time.monotonic()
            s3.upload_file(str(state), bucket, "raw/state.bin", ExtraArgs=enc.on_write(), Config=transfer)
            results["raw boto3 multipart"].append(time.monotonic() - t0)
            s3.delete_object(Bucket=bucket, Key="raw/state.bin")
            _gc(env["conf"])
            written = client.write({"state.bin": state}, step=r)
            results["checkpoint write"].append(written.seconds)
            out = Path(d) / "restored"
            t0 = time.monotonic()
            client.restore(out)
            results["checkpoint restore"].append(time.monotonic() - t0)
            (out / "state.bin").unlink()
            client.prune()
            _gc(env["conf"])
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in results.items()), flush=True)
    for gen in client.generations():
        client.store.delete(bucket, [client.manifest_key(gen.number)] +
                            [o["key"] for o in gen.objects])
    s3.delete_bucket(Bucket=bucket)
    _gc(env["conf"])
    print(f"\n| measure ({size / MiB / 1024:.2f} GiB, SSE-KMS) | median s | worst s | median MiB/s |")
    print("|---|---|---|---|")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"| {name} | {med:.2f} | {max(values):.2f} | {size / MiB / med:.0f} |")
    ckpt, raw = statistics.median(results["checkpoint write"]), statistics.median(results["raw single PUT"])
    multi = statistics.median(results["raw boto3 multipart"])
    print(f"\nratio checkpoint write / raw single PUT: {ckpt / raw:.2f}x; / boto3 multipart: {ckpt / multi:.2f}x")
    print(f"seed target 2 GB final write <= 45 s: worst round {max(results['checkpoint write']):.2f} s "
          f"-> {'met' if max(results['checkpoint write']) <= 45 * size / (2 * 1024 * MiB) else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
