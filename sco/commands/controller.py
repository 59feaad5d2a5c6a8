"""``sco controller run|rebuild``: the thin controller for one partition, and the rebuild of fleet state from
provider tags into an empty database (ADR-11)."""

from __future__ import annotations

import argparse
import socket
import time
from pathlib import Path
from typing import Any

from sco.cli import CliError

__all__ = ["register"]


def _provider(args: argparse.Namespace) -> Any:
    if not args.sim_url:
        raise CliError("--sim-url is required: the OpenStack provider is configured through clouds.yaml in "
                       "production (not wired into this command yet); point --sim-url at `sco sim region serve`")
    from controllers.providers.simulated import SimulatedProvider

    return SimulatedProvider(args.sim_url, region=args.region)


def _contracts(bundle: Path, pubkey: Path) -> dict[str, Any]:
    from contracts.bundle_verify import BundleError, verify_bundle
    from contracts.schema import Contract

    try:
        verified = verify_bundle(bundle, pubkey)
    except (BundleError, OSError) as exc:
        raise CliError(f"controller bundle {bundle} refused: {exc}; recompile with `sco contracts compile`") from None
    fields = set(Contract.model_fields)
    return {ref: Contract.model_validate({k: v for k, v in entry.items() if k in fields})
            for ref, entry in verified.payload.get("workloads", {}).items()}


def _run(args: argparse.Namespace) -> int:
    import psycopg

    from controllers.controller.budget import BudgetedProvider, split_budget
    from controllers.controller.claims_slurm import SlurmSource
    from controllers.controller.loop import Controller, ControllerSettings
    from controllers.simregion.clock import WallClock
    from sco.stores import migrate
    from sco.stores.config import resolve_url

    if "/" not in args.partition or not args.partition.startswith(args.region + "/"):
        raise CliError(f"--partition {args.partition!r} must be '<region>/<cluster>' in region {args.region!r}")
    contracts = _contracts(args.bundle, args.pubkey)
    partitions = args.all_partitions.split(",") if args.all_partitions else [args.partition]
    bucket = split_budget(args.region_budget, partitions)[args.partition]
    provider = BudgetedProvider(_provider(args), bucket)
    conn = psycopg.connect(resolve_url("postgres", args.postgres), autocommit=True)
    migrate.migrate_postgres(conn)
    source = SlurmSource(tuple(args.slurm_partitions.split(",")))
    holder = args.holder or f"{socket.gethostname()}:{time.time_ns()}"
    ctl = Controller(ControllerSettings(args.region, args.partition, holder=holder), provider, conn, source, contracts,
                     WallClock())
    n = 0
    while args.passes == 0 or n < args.passes:
        report = ctl.step()
        print(f"pass {n + 1}: leader={report.leader} read_only={report.read_only} generation={report.generation} "
              f"launched={report.launched} terminated={report.terminated} held={report.held}", flush=True)
        n += 1
        time.sleep(args.interval)
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    import psycopg

    from controllers.controller.rebuild import rebuild
    from sco.stores import migrate
    from sco.stores.config import resolve_url

    conn = psycopg.connect(resolve_url("postgres", args.postgres), autocommit=True)
    migrate.migrate_postgres(conn)
    found = conn.execute("SELECT count(*) FROM instances WHERE region = %s", (args.region,)).fetchone()
    rows = int(found[0]) if found else 0
    if rows and not args.force:
        raise CliError(f"the database already holds {rows} instance row(s) for region {args.region}; rebuild is for an "
                       "empty database (pass --force to merge tags over existing rows)")
    report = rebuild(_provider(args), conn, datetime.now(UTC))
    print(f"rebuilt {report.instances} instance(s) from tags in {report.seconds:.2f} s "
          f"({report.untagged} untagged, not adopted); partitions: {report.partitions}. "
          "Controllers act only after two read-only cycles.")
    return 0


def register(subparsers: Any) -> None:
    group = subparsers.add_parser("controller", help="the capacity controller (run a partition, rebuild from tags)")
    sub = group.add_subparsers(dest="controller_command", required=True)
    for name, handler, text in (("run", _run, "run the level-triggered controller for one partition"),
                                ("rebuild", _rebuild, "rebuild fleet state from provider tags into an empty DB")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--region", default="r1", help="region name (default r1)")
        p.add_argument("--sim-url", default=None, help="simulated region base URL (sco sim region serve)")
        p.add_argument("--postgres", default=None, help="PostgreSQL URL (default SCO_POSTGRES_URL / sco up)")
        if name == "run":
            p.add_argument("--partition", required=True, help="<region>/<cluster>, e.g. r1/slurm-hpc")
            p.add_argument("--bundle", type=Path, required=True, help="controller-bundle.json of the partition")
            p.add_argument("--pubkey", type=Path, required=True, help="bundle signing public key (PEM)")
            p.add_argument("--slurm-partitions", default="reclaimable",
                           help="reclaimable Slurm partitions (comma list)")
            p.add_argument("--all-partitions", default="", help="every partition of the region (static budget split)")
            p.add_argument("--region-budget", type=float, default=10.0, help="mutating calls/s for the region")
            p.add_argument("--interval", type=float, default=5.0, help="seconds between passes")
            p.add_argument("--passes", type=int, default=0, help="stop after N passes (0: run forever)")
            p.add_argument("--holder", default="", help="lease holder id (default host:time)")
        else:
            p.add_argument("--force", action="store_true", help="merge into a non-empty database")
        p.set_defaults(handler=handler)
