"""``sco controller run|rebuild``: the thin controller for one partition, and the rebuild of fleet state from
provider tags into an empty database (ADR-11)."""

from __future__ import annotations

import argparse
import logging
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE
from sco.cli import CliError

from .controller_claims import add_claims_options, claim_source
from .controller_refresh import add_refresh_options
from .controller_userdata import add_agent_options, add_agent_version_options, register_into
from .metrics import add_metrics_args

if TYPE_CHECKING:
    from collections.abc import Callable

    from controllers.providers.budget import TokenBucket

__all__ = ["register"]


def _provider(args: argparse.Namespace) -> Any:
    if args.sim_url and args.clouds_yaml:
        raise CliError("give either --sim-url (the simulated region) or --clouds-yaml/--cloud (OpenStack), not both")
    if args.clouds_yaml:
        issuer = getattr(args, "credential_issuer", "")
        if not (args.cloud or issuer) or not args.image:
            raise CliError("--clouds-yaml needs --image <name> (the image baked with the agent) and --cloud <entry> "
                           "or --credential-issuer <entry>")
        from controllers.providers.openstack import OpenStackProvider

        if issuer:
            return OpenStackProvider.from_credential_issuer(args.clouds_yaml, issuer, region=args.region,
                                                            image=args.image, node_credentials=_node_credentials(args))
        return OpenStackProvider.from_clouds_yaml(args.clouds_yaml, args.cloud, region=args.region, image=args.image,
                                                  node_credentials=_node_credentials(args))
    if not args.sim_url:
        raise CliError("no provider: pass --sim-url <url of `sco sim region serve`> or --clouds-yaml/--cloud/--image")
    from controllers.providers.simulated import SimulatedProvider

    return SimulatedProvider(args.sim_url, region=args.region)


def _node_credentials(args: argparse.Namespace) -> Any:
    """Per-instance Keystone application credentials through ``--keystone-issuer`` (a clouds.yaml entry that is
    not a restricted application credential: Keystone refuses those any credential management), or None."""
    if not getattr(args, "keystone_issuer", ""):
        return None
    if not args.clouds_yaml:
        raise CliError("--keystone-issuer needs --clouds-yaml (the entry is read from it)")
    import yaml

    from controllers.providers.appcred import connect_sdk
    from controllers.providers.node_credentials import KeystoneNodeCredentials

    clouds = yaml.safe_load(args.clouds_yaml.read_text()).get("clouds", {})
    if args.keystone_issuer not in clouds:
        raise CliError(f"--keystone-issuer {args.keystone_issuer!r} is not an entry of {args.clouds_yaml} "
                       f"(entries: {', '.join(sorted(clouds))})")
    return KeystoneNodeCredentials(connect_sdk(**clouds[args.keystone_issuer]))


def _verified(bundle: Path, pubkey: Path, governance_key: Path | None) -> Any:
    from contracts.bundle_verify import BundleError, verify_bundle

    try:
        return verify_bundle(bundle, pubkey, governance_key)
    except (BundleError, OSError) as exc:
        raise CliError(f"controller bundle {bundle} refused: {exc}; recompile with `sco contracts compile`") from exc


def _admit(args: argparse.Namespace, payload: dict[str, Any], conn: Any) -> None:
    """Refuse an older generation or another partition's bundle (counted, ``bundle-refused`` event)."""
    from datetime import UTC, datetime

    from controllers.controller.bundle_guard import BundleGuard, refusal_event
    from stores.outbox import enqueue

    refusal = BundleGuard(conn, args.partition).admit(payload, f"controller bundle {args.bundle}")
    if refusal is None:
        return
    with conn.transaction():
        enqueue(conn, refusal_event(refusal, region=args.region, partition=args.partition, now=datetime.now(UTC)))
    raise CliError(f"{refusal.code}: {refusal.message} (refused {refusal.count} time(s) so far)")


def _pass_metrics(args: argparse.Namespace, bucket: Any, postgres: str | None) -> Any:
    """The controller's metrics factory and endpoint (``--metrics-port``), or None without one. The metrics read
    the rankings' age on a connection of their own (the pass's is busy with the pass)."""
    if not args.metrics_port:
        return None
    from controllers.controller.metrics import PassMetrics
    from stores import postgres as pg
    from stores.telemetry import Registry

    from .metrics import start_metrics

    registry = Registry({"region": args.region, "partition": args.partition})
    start_metrics(args, registry, f"controller {args.partition}")
    conn = pg.connect(postgres, autocommit=True, component="controller", reconnect=True)
    return lambda desired: PassMetrics(registry, desired, bucket=bucket, conn=conn)


def _agent_bundle(bundle: Path) -> tuple[bytes, bytes] | None:
    """The partition's signed agent bundle beside its controller bundle (what every launch carries), or None."""
    agent_path = bundle.with_name(AGENT_BUNDLE)
    sig = agent_path.with_name(AGENT_SIGNATURE)
    return (agent_path.read_bytes(), sig.read_bytes()) if agent_path.exists() and sig.exists() else None


def partition_bucket(region_rate: float, partitions: list[str], partition: str, interval_s: float,
                     monotonic: Callable[[], float] = time.monotonic) -> TokenBucket:
    """This partition's share of the region's budget (ADR-12's static split), its burst one pass interval's worth:
    a pass ends at its first ``Throttled`` and the next comes an interval later, so a one-second burst would let
    a controller use about a fifth of its share (found by the fleet-scale simulation)."""
    from controllers.controller.budget import split_budget

    return split_budget(region_rate, partitions, monotonic=monotonic, burst_s=interval_s)[partition]


def _run(args: argparse.Namespace) -> int:
    import asyncio
    from decimal import Decimal

    from controllers.controller.approvals import http_webhook
    from controllers.controller.breaker import SafetyConfig
    from controllers.controller.budget import BudgetedProvider
    from controllers.controller.loop import Controller, ControllerSettings
    from controllers.simregion.clock import WallClock
    from stores import migrate
    from stores import postgres as pg

    from .controller_serve import serve

    if "/" not in args.partition or not args.partition.startswith(args.region + "/"):
        raise CliError(f"--partition {args.partition!r} must be '<region>/<cluster>' in region {args.region!r}")
    from controllers.controller.bundle_refresh import contracts_of

    from .controller_refresh import controller_feed, refresher, revoker, startup_bundle

    verified = _verified(args.bundle, args.pubkey, args.governance_key)
    bundle_feed = controller_feed(args, verified)  # --distributor-url: the controller's own bundle refreshes
    payload = startup_bundle(bundle_feed, verified).payload
    contracts = contracts_of(payload)
    agent_bundle = _agent_bundle(args.bundle)
    partitions = args.all_partitions.split(",") if args.all_partitions else [args.partition]
    if args.partition not in partitions:
        raise CliError(f"--all-partitions {args.all_partitions!r} must include --partition {args.partition!r}")
    bucket = partition_bucket(args.region_budget, partitions, args.partition, args.interval)
    raw_provider = _provider(args)
    provider = BudgetedProvider(raw_provider, bucket)
    # reconnect: a failover (multi-host URL, target_session_attrs=read-write) fails one pass, the next reconnects
    conn = pg.connect(args.postgres, autocommit=True, component="controller", reconnect=True)
    migrate.migrate_postgres(conn)
    _admit(args, payload, conn)
    from controllers.controller.store import publish_contracts_in_force

    publish_contracts_in_force(conn, payload)
    from stores import footprint

    footprint.start_for(args.postgres, args.region, "controller")  # the orchestrator's own cost (ADR-26)
    source = claim_source(args)
    holder = args.holder or f"{socket.gethostname()}:{time.time_ns()}"
    safety = SafetyConfig(recovery_share=Decimal(str(args.recovery_share)))
    from .controller_userdata import agent_bundle_feed, agent_credentials, agent_rollout, agent_settings
    from .keys import approver_keys

    settings = ControllerSettings(args.region, args.partition, holder=holder, safety=safety,
                                  operator=args.operator or None, approver_keys=approver_keys(args.approver_keys),
                                  agent=agent_rollout(args), **agent_settings(args))
    metrics = _pass_metrics(args, bucket, args.postgres)
    minting = agent_credentials(args)
    ctl = Controller(settings, provider, conn, source, contracts, WallClock(), agent_bundle=agent_bundle,
                     agent_credentials=minting, revoker=revoker(raw_provider, minting, args.region),
                     webhook=http_webhook(args.approval_webhook) if args.approval_webhook else None,
                     metrics=metrics)
    feed = agent_bundle_feed(args, args.pubkey, agent_bundle)
    refresh = refresher(ctl, bundle_feed, conn, args.partition)
    asyncio.run(serve(args, ctl, conn, holder, feed, refresh))
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    import psycopg

    from controllers.controller.rebuild import rebuild
    from stores import migrate
    from stores.config import resolve_url

    conn = psycopg.connect(resolve_url("postgres", args.postgres, component="controller"), autocommit=True)
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


def _watch_exclusions(args: argparse.Namespace) -> int:
    """The streaming exclusion watcher (ADR-07), one per region: a durable JetStream consumer on the region's
    lifecycle events; exclusions and their evidence go to PostgreSQL (read by every partition's controller)
    and an ``excluded`` event to the stream."""
    import asyncio
    import signal
    from datetime import timedelta

    from controllers.controller.exclusion import ExclusionConfig
    from controllers.controller.exclusion_stream import ExclusionStream
    from controllers.controller.store import Store
    from controllers.simregion.clock import WallClock
    from stores import migrate
    from stores import nats as sco_nats
    from stores import postgres as pg

    if args.wave_gap_s <= 0:
        raise CliError(f"--wave-gap-s must be above 0, got {args.wave_gap_s}")
    conn = pg.connect(args.postgres, autocommit=True, component="controller", reconnect=True)
    migrate.migrate_postgres(conn)
    stream = ExclusionStream(Store(conn, args.region, f"{args.region}/*", actor="sco-exclusion-watcher"),
                             ExclusionConfig(wave_gap=timedelta(seconds=args.wave_gap_s)))
    from stores import footprint

    footprint.start_for(args.postgres, args.region, "exclusion-watcher")
    if args.metrics_port:
        from controllers.controller.exclusion_metrics import watch
        from stores.telemetry import Registry

        from .metrics import start_metrics

        registry = Registry({"region": args.region})
        watch(registry, stream, pg.connect(args.postgres, autocommit=True, component="controller", reconnect=True))
        start_metrics(args, registry, f"exclusion watcher {args.region}")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        nc = await sco_nats.connect(args.nats, name=f"sco-exclusion-{args.region}", component="controller")
        try:
            logging.getLogger("sco.exclusion_watcher").info(
                "exclusion watcher for region %s: three waves (gap %g s) in 30 min exclude a pool", args.region,
                args.wave_gap_s)
            await stream.run(nc.jetstream(), stop, WallClock())
        finally:
            await nc.close()

    asyncio.run(main())
    return 0


def _reset_breaker(args: argparse.Namespace) -> int:
    import psycopg

    from controllers.controller.store import close_breaker
    from stores.config import resolve_url

    with psycopg.connect(resolve_url("postgres", args.postgres), autocommit=True) as conn:
        tripped = close_breaker(conn, args.region, args.partition, f"reset by operator: {args.reason}")
    if tripped is None:
        raise CliError(f"no open termination breaker for partition {args.partition!r} in region {args.region!r}")
    print(f"closed the termination breaker of {args.partition} (tripped at {tripped}); terminations resume within "
          "the 2 %/10 min bound")
    return 0


def register(subparsers: Any) -> None:
    """Add ``sco controller`` (run a partition, rebuild from tags, watch exclusions) to the parser."""
    group = subparsers.add_parser("controller", help="the capacity controller (run a partition, rebuild from tags)")
    sub = group.add_subparsers(dest="controller_command", required=True)
    watch = sub.add_parser("watch-exclusions", help="the streaming exclusion watcher of a region (ADR-07)")
    watch.add_argument("--region", default="r1", help="region name (default r1)")
    watch.add_argument("--nats", default=None, help="NATS URL (default SCO_NATS_URL / sco up)")
    watch.add_argument("--postgres", default=None, help="PostgreSQL URL (default SCO_POSTGRES_URL / sco up)")
    watch.add_argument("--wave-gap-s", type=float, default=60.0,
                       help="notices closer than this are one wave (default 60 s; compressed demos use less)")
    add_metrics_args(watch)
    watch.set_defaults(handler=_watch_exclusions)
    for name, handler, text in (("run", _run, "run the level-triggered controller for one partition"),
                                ("rebuild", _rebuild, "rebuild fleet state from provider tags into an empty DB")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--region", default="r1", help="region name (default r1)")
        p.add_argument("--sim-url", default=None, help="simulated region base URL (sco sim region serve)")
        p.add_argument("--clouds-yaml", type=Path, default=None, help="OpenStack clouds.yaml (application credential)")
        p.add_argument("--cloud", default="", help="entry in --clouds-yaml")
        p.add_argument("--credential-issuer", default="",
                       help="clouds.yaml entry with the orchestrator user's authority: the controller connects on an "
                            "application credential it issues for 1 h and renews 15 min before it lapses (ADR-29), "
                            "instead of --cloud's fixed credential")
        p.add_argument("--image", default="", help="OpenStack image with the agent baked in")
        p.add_argument("--postgres", default=None, help="PostgreSQL URL (default SCO_POSTGRES_URL / sco up)")
        if name == "run":
            p.add_argument("--partition", required=True, help="<region>/<cluster>, e.g. r1/slurm-hpc")
            p.add_argument("--bundle", type=Path, required=True, help="controller-bundle.json of the partition")
            p.add_argument("--pubkey", type=Path, required=True, help="bundle signing public key (PEM)")
            p.add_argument("--all-partitions", default="", help="every partition of the region (static budget split)")
            p.add_argument("--region-budget", type=float, default=10.0, help="mutating calls/s for the region")
            p.add_argument("--interval", type=float, default=5.0, help="seconds between passes")
            p.add_argument("--passes", type=int, default=0, help="stop after N passes (0: run forever)")
            p.add_argument("--holder", default="", help="lease holder id (default host:time)")
            p.add_argument("--governance-key", type=Path, default=None, help="governance public key (ADR-30)")
            p.add_argument("--keystone-issuer", default="",
                           help="clouds.yaml entry that issues a Keystone application credential per instance at "
                                "launch and deletes it on termination (default: none, revocation not configured)")
            add_claims_options(p)
            p.add_argument("--nats", default=None,
                           help="NATS URL, or 'stack' for SCO_NATS_URL / the stack file's: wake on notices and "
                                "losses (default: poll only)")
            p.add_argument("--approval-webhook", default=None, help="Alertmanager-format webhook URL for approvals")
            p.add_argument("--approver-keys", type=Path, default=None,
                           help="directory of approvers' public keys, <e-mail>.pub.pem (default "
                                "$SCO_HOME/keys/approvers): whose signed answers the arbiter accepts")
            p.add_argument("--operator", default="",
                           help="who operates this controller (e-mail); recorded on approval requests, it may "
                                "not approve them (ADR-30; default the lease holder id)")
            p.add_argument("--recovery-share", type=float, default=0.05,
                           help="share of the partition acted on per 5 min after a restart (ADR-12: 0.05)")
            add_agent_options(p)
            add_agent_version_options(p)
            add_refresh_options(p)
            add_metrics_args(p)
        else:
            p.add_argument("--force", action="store_true", help="merge into a non-empty database")
        p.set_defaults(handler=handler)
    register_into(sub)
    p = sub.add_parser("reset-breaker", help="close a partition's open termination breaker (after investigation)")
    p.add_argument("--region", default="r1")
    p.add_argument("--partition", required=True, help="<region>/<cluster>")
    p.add_argument("--reason", required=True, help="why it is safe to terminate again (recorded)")
    p.add_argument("--postgres", default=None, help="PostgreSQL URL (default SCO_POSTGRES_URL / sco up)")
    p.set_defaults(handler=_reset_breaker)
