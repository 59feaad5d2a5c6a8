"""``python -m workload.checkpoint write|restore|list|lifecycle`` — the client from a shell (batch scripts, tests).

Configuration comes from the environment (see :mod:`workload.checkpoint.config`). ``write`` prints one line per
uploaded part (``part <name> <n>``) and the generation number at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .client import MiB
from .config import client_from_env
from .errors import CheckpointError


def main(argv: list[str] | None = None) -> int:
    """``python -m workload.checkpoint``: write, restore or list generations, or install the lifecycle rule."""
    parser = argparse.ArgumentParser(prog="python -m workload.checkpoint")
    parser.add_argument("--part-mib", type=int, default=64, help="multipart part size in MiB (>= 5)")
    parser.add_argument("--concurrency", type=int, default=4)
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the files of a directory as one generation")
    w.add_argument("directory", type=Path)
    w.add_argument("--step", type=int)
    r = sub.add_parser("restore", help="restore the newest complete generation into a directory")
    r.add_argument("directory", type=Path)
    sub.add_parser("list", help="list complete generations, newest first")
    sub.add_parser("lifecycle", help="create the bucket if needed and install the lifecycle rule")
    args = parser.parse_args(argv)
    try:
        client = client_from_env()
        client.part_size, client.concurrency = args.part_mib * MiB, args.concurrency
        if args.cmd == "write":
            files = {p.relative_to(args.directory).as_posix(): p
                     for p in sorted(args.directory.rglob("*")) if p.is_file()}
            result = client.write(files, step=args.step,
                                  on_part=lambda name, n: print(f"part {name} {n}", flush=True))
            print(f"generation {result.generation.number} {result.generation.size} bytes "
                  f"{result.seconds:.3f}s", flush=True)
        elif args.cmd == "restore":
            gen = client.restore(args.directory)
            print("none" if gen is None else f"generation {gen.number} step {gen.step}")
        elif args.cmd == "list":
            for g in client.generations():
                print(json.dumps({"generation": g.number, "step": g.step, "bytes": g.size,
                                  "created_at": g.created_at.isoformat()}))
        else:
            client.ensure_bucket()
            print(json.dumps(client.store.get_lifecycle(client.bucket)))
    except CheckpointError as exc:
        print(f"workload.checkpoint: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
