"""The PyTorch final checkpoint (DCP through the client) against the drain budget of the example contract
``pytorch-llm-finetune`` (drain_budget_s, final_size_gib), on the Ceph RGW test bed.

    .venv/bin/python -m bench.checkpoint_pytorch [--width 1024] [--rounds 3]

Per round: ``torch.save`` of the same state to memory and one raw ``PutObject`` (baseline) against
``DcpState.save`` (DCP files staged locally, uploaded as one generation, manifest last). Prints the median
and worst final-write time, the share of the drain budget it uses, and the contract's declared final size
extrapolated at the measured rate.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from bench._cli import stop_on_signals

MiB = 1024 * 1024
TESTBED = os.environ.get("SCO_CEPH_TESTBED_DIR") or Path(__file__).resolve().parents[1] / ".sco" / "testbed" / "ceph"
ENV = Path(TESTBED) / "env.json"
CONTRACT = Path(__file__).resolve().parents[1] / "deploy" / "contracts" / "workloads" / "pytorch-llm-finetune.yaml"


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint_pytorch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)  # before torch: --help answers without importing it

    import torch

    from workload.checkpoint import CheckpointClient, Encryption, S3Store, s3_client
    from workload.checkpoint.torch_dcp import DcpState

    env: dict[str, Any] = json.loads(ENV.read_text())
    contract = yaml.safe_load(CONTRACT.read_text())
    budget = float(contract["drain_budget_s"])
    ident = env["identities"]["workload-a"]
    s3 = s3_client(env["endpoint"], ident["access_key"], ident["secret_key"])
    enc = Encryption(kms_key_id=ident["kms_key_id"])
    bucket = f"sco-bench-torch-{uuid.uuid4().hex[:8]}"
    client = CheckpointClient(S3Store(s3), bucket, "pytorch-llm-finetune", enc, keep=1)
    client.ensure_bucket()
    torch.manual_seed(0)
    w = args.width
    model = torch.nn.Sequential(torch.nn.Linear(w, 4 * w), torch.nn.ReLU(), torch.nn.Linear(4 * w, w))
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, w)).sum().backward()
    optimizer.step()
    state = DcpState(client, model, optimizer)
    raw_s: list[float] = []
    ckpt_s: list[float] = []
    size = 0
    for r in range(args.rounds):
        buf = io.BytesIO()
        t0 = time.monotonic()
        torch.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, buf)
        s3.put_object(Bucket=bucket, Key="raw/state.pt", Body=buf.getvalue(), **enc.on_write())
        raw_s.append(time.monotonic() - t0)
        t0 = time.monotonic()
        gen = state.save(r)
        ckpt_s.append(time.monotonic() - t0)
        size = gen.size
        print(f"round {r + 1}: raw torch.save+PUT {raw_s[-1]:.2f} s, DCP final write {ckpt_s[-1]:.2f} s "
              f"({size / MiB:.0f} MiB)", flush=True)
    s3.delete_object(Bucket=bucket, Key="raw/state.pt")
    client.prune()
    for gen_ in client.generations():
        client.store.delete(bucket, [client.manifest_key(gen_.number)] + [o["key"] for o in gen_.objects])
    s3.delete_bucket(Bucket=bucket)
    med = statistics.median(ckpt_s)
    rate = size / MiB / med
    declared = float(contract["checkpoint"]["final_size_gib"]) * 1024 / rate
    print(f"\n| measure ({size / MiB:.0f} MiB DCP state, width {w}) | median s | worst s |")
    print("|---|---|---|")
    print(f"| baseline: torch.save + one raw PUT | {statistics.median(raw_s):.2f} | {max(raw_s):.2f} |")
    print(f"| DCP final write through the client | {med:.2f} | {max(ckpt_s):.2f} |")
    print(f"\nratio DCP / raw: {med / statistics.median(raw_s):.2f}x; worst final write uses "
          f"{100 * max(ckpt_s) / budget:.1f} % of the {budget:.0f} s drain budget; the contract's declared "
          f"{contract['checkpoint']['final_size_gib']} GiB at {rate:.0f} MiB/s would take {declared:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
