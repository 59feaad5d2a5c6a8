"""``sco up | down | status``, ``sco db migrate``, ``sco clickhouse serve | migrate``, ``sco ingest`` and
``sco outbox relay``: the embedded stack and the event spine (docs/stack.md)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from sco.cli import CliError

from .metrics import add_metrics_args

__all__ = ["register"]


def _home(args: argparse.Namespace) -> Path | None:
    return Path(args.home) if getattr(args, "home", None) else None


def _print_services(rows: list[Any], as_json: bool) -> None:
    from sco.stack.credentials import redact_url

    # passwords stay in stack.json and credentials.json (0600), never on a terminal or in a pipe: a script that
    # needs a URL reads the stack file (stores.config.load_urls)
    if as_json:
        print(json.dumps([{"name": r.name, "url": redact_url(r.url) if r.url else r.url, "managed": r.managed,
                           "pid": r.pid, "healthy": r.healthy, "state": r.action} for r in rows], indent=2))
        return
    for r in rows:
        origin = "embedded" if r.managed else ("external" if r.url else "-")
        url = redact_url(r.url) if r.url else "-"  # the password stays in stack.json (0600), not on the terminal
        print(f"{r.name:<11} {r.action:<8} {origin:<8} {url}" + (f"  (pid {r.pid})" if r.pid else ""))


def _up(args: argparse.Namespace) -> int:
    from sco.stack import manager
    from sco.stack.bootstrap import prepare
    from stores.config import load_urls

    started = time.monotonic()
    try:
        rows = manager.up(_home(args), fast=args.fast, nats_cluster=args.nats_cluster)
    except ValueError as exc:
        raise CliError(f"--nats-cluster {args.nats_cluster}: {exc}") from None
    _print_services(rows, args.json)
    if not args.no_migrate:
        home = _home(args)
        prepared = prepare(load_urls(home.resolve() if home else None))
        if not args.json:
            print(f"migrations: postgres +{len(prepared.postgres.applied)}, clickhouse "
                  f"+{len(prepared.clickhouse.applied)}; streams: {', '.join(prepared.streams)}")
    if not args.json:
        print(f"up in {time.monotonic() - started:.1f} s; URLs in {_stack_file(args)}")
    return 0


def _stack_file(args: argparse.Namespace) -> Path:
    from stores.config import stack_file

    return stack_file(_home(args))


def _down(args: argparse.Namespace) -> int:
    from sco.stack import manager

    rows = manager.down(_home(args))
    if not rows and not args.json:
        print(f"nothing to stop ({_stack_file(args)} not found)")
    _print_services(rows, args.json)
    return 0


def _status(args: argparse.Namespace) -> int:
    from sco.stack import manager

    rows = manager.status(_home(args))
    _print_services(rows, args.json)
    return 0 if all(r.healthy for r in rows) else 1


def _db_migrate(args: argparse.Namespace) -> int:
    from stores import migrate, postgres
    from stores.config import StoreNotConfigured

    try:
        with postgres.connect(args.url, autocommit=True, home=_home(args)) as conn:
            report = migrate.migrate_postgres(conn)
    except StoreNotConfigured as exc:
        raise CliError(str(exc)) from None
    return _report("postgres", report)


def _report(store: str, report: Any) -> int:
    print(f"{store}: applied {len(report.applied)} ({', '.join(report.applied) or 'none'}), "
          f"already applied {len(report.skipped)}")
    for name in report.changed:
        print(f"{store}: warning: {name} changed after it was applied; add a new migration file instead")
    return 0


def _ch_migrate(args: argparse.Namespace) -> int:
    from stores import clickhouse, migrate
    from stores.config import StoreNotConfigured

    if args.cluster or args.print:
        return _ch_cluster_ddl(args)

    try:
        client = clickhouse.client(args.url, home=_home(args))
    except StoreNotConfigured as exc:
        raise CliError(str(exc)) from None
    return _report("clickhouse", migrate.migrate_clickhouse(client))


def _ch_cluster_ddl(args: argparse.Namespace) -> int:
    """``--cluster NAME --print``: the migrations as a ClickHouse cluster runs them (replicated local tables,
    Distributed tables over them), for ``clickhouse-client --multiquery`` on one host of the cluster."""
    from stores.clickhouse_cluster import ClusterRenderError, render_migrations

    if not (args.cluster and args.print):
        raise CliError("--cluster NAME and --print go together: print the cluster DDL, then run it with "
                       "clickhouse-client --multiquery on one host of the cluster")
    try:
        rendered = render_migrations(args.cluster)
    except ClusterRenderError as exc:
        raise CliError(f"--cluster {args.cluster!r}: {exc}") from None
    for name, statements in rendered:
        print(f"-- {name}")
        for statement in statements:
            print(f"{statement};\n")
    return 0


def _ch_serve(args: argparse.Namespace) -> int:
    from sco.stack.clickhouse_http import serve

    if args.data is None and not args.memory:
        raise CliError("--data: give the chDB data directory (or --memory for a throw-away engine)")
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port}: must be 0..65535 (0 picks a free port)")
    from sco.stack.clickhouse_http.errors import AuthConfigError, UsersFileError

    try:
        return serve(None if args.memory else str(args.data), host=args.host, port=args.port, verbose=args.verbose,
                     users_file=args.users_file, no_auth=args.no_auth)
    except (UsersFileError, AuthConfigError) as exc:
        raise CliError(str(exc)) from None


def _ingest(args: argparse.Namespace) -> int:
    from stores import ingest

    if args.batch < 1:
        raise CliError(f"--batch {args.batch}: must be at least 1")
    argv = ["--batch", str(args.batch)] + (["--once"] if args.once else [])
    for flag in ("nats", "clickhouse"):
        if getattr(args, flag):
            argv += [f"--{flag}", getattr(args, flag)]
    if not args.once:
        from stores import footprint

        footprint.start_for(None, None, "ingest")
        _ingest_metrics(args)
    return ingest.main(argv)


def _ingest_metrics(args: argparse.Namespace) -> None:
    """``--metrics-port``: the ingest's lag, dead letters and the ledger's cost ratio (stores.ingest_metrics)."""
    if not args.metrics_port:
        return
    from stores import nats as sco_nats
    from stores.clickhouse import client
    from stores.config import resolve_url
    from stores.ingest_metrics import IngestSampler
    from stores.telemetry import Registry

    from .metrics import start_metrics

    registry = Registry()
    IngestSampler(registry, lambda: sco_nats.connect(args.nats, name="sco-ingest-metrics", component="ingest"),
                  lambda: client(resolve_url("clickhouse", args.clickhouse, component="ingest"))).start()
    start_metrics(args, registry, "ingest")


def _relay(args: argparse.Namespace) -> int:
    from stores import outbox

    argv = ["--batch", str(args.batch)] + (["--once"] if args.once else [])
    for flag in ("postgres", "nats", "clickhouse"):
        if getattr(args, flag):
            argv += [f"--{flag}", getattr(args, flag)]
    if not args.once:
        from stores import footprint

        footprint.start_for(args.postgres, None, "outbox-relay")
        if args.metrics_port:
            import psycopg

            from stores.config import resolve_url
            from stores.outbox_metrics import watch
            from stores.telemetry import Registry

            from .metrics import start_metrics

            registry = Registry()
            watch(registry, psycopg.connect(resolve_url("postgres", args.postgres, component="relay"),
                                            autocommit=True))
            start_metrics(args, registry, "outbox relay")
    return outbox.main(argv)


def register(sub: Any) -> None:
    """Add the stack commands (``sco up``, ``status``, ``down``, ...) to the parser."""
    home = argparse.ArgumentParser(add_help=False)
    home.add_argument("--home", help="stack directory (default: $SCO_HOME or .sco)")
    home.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("up", parents=[home], help="start (or reuse) the embedded PostgreSQL, NATS and ClickHouse")
    p.add_argument("--no-migrate", action="store_true", help="do not apply migrations or create streams")
    p.add_argument("--fast", action="store_true", help="PostgreSQL without fsync (tests and demos only)")
    p.add_argument("--nats-cluster", type=int, default=1, metavar="N",
                   help="NATS as N nats-servers in one JetStream cluster, streams at 3 replicas (1 or 3; default 1)")
    p.set_defaults(handler=_up)
    sub.add_parser("down", parents=[home], help="stop what `sco up` started").set_defaults(handler=_down)
    sub.add_parser("status", parents=[home], help="show the stores and whether they answer").set_defaults(
        handler=_status)

    db = sub.add_parser("db", help="PostgreSQL fleet state").add_subparsers(dest="db_command", metavar="COMMAND")
    db.required = True
    p = db.add_parser("migrate", parents=[home], help="apply the PostgreSQL migrations (idempotent)")
    p.add_argument("--url", help="PostgreSQL URL (default: $SCO_POSTGRES_URL or the stack file)")
    p.set_defaults(handler=_db_migrate)

    ch = sub.add_parser("clickhouse", help="the embedded ClickHouse").add_subparsers(
        dest="ch_command", metavar="COMMAND")
    ch.required = True
    p = ch.add_parser("serve", help="serve the ClickHouse HTTP protocol over a chDB data directory")
    p.add_argument("--data", type=Path, help="chDB data directory (owned by this process)")
    p.add_argument("--memory", action="store_true", help="in-memory engine (nothing kept)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8123, help="0 picks a free port (printed on start)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.add_argument("--users-file", type=Path, help="users JSON, mode 0600 (name, password_sha256_hex, profile)")
    p.add_argument("--no-auth", action="store_true", help="serve without authentication (tests/development only)")
    p.set_defaults(handler=_ch_serve)
    p = ch.add_parser("migrate", parents=[home], help="apply the ClickHouse migrations (idempotent)")
    p.add_argument("--url", help="ClickHouse URL (default: $SCO_CLICKHOUSE_URL or the stack file)")
    p.add_argument("--cluster", default="", help="a ClickHouse cluster's name (remote_servers): with --print, the "
                   "migrations as ReplicatedMergeTree tables ON CLUSTER with Distributed tables over them")
    p.add_argument("--print", action="store_true", help="print the DDL instead of applying it (with --cluster)")
    p.set_defaults(handler=_ch_migrate)

    p = sub.add_parser("ingest", help="move events from JetStream into ClickHouse (durable consumer)")
    p.add_argument("--nats")
    p.add_argument("--clickhouse")
    p.add_argument("--batch", type=int, default=2000, help="events per ClickHouse insert (default 2000)")
    p.add_argument("--once", action="store_true", help="stop when nothing is waiting")
    add_metrics_args(p)
    p.set_defaults(handler=_ingest)

    outbox = sub.add_parser("outbox", help="the transactional outbox").add_subparsers(
        dest="outbox_command", metavar="COMMAND")
    outbox.required = True
    p = outbox.add_parser("relay", help="publish committed outbox rows to JetStream and the audit sink")
    p.add_argument("--postgres")
    p.add_argument("--nats")
    p.add_argument("--clickhouse")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--once", action="store_true", help="stop when the outbox is empty")
    add_metrics_args(p)
    p.set_defaults(handler=_relay)
