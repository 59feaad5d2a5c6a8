"""``sco distributor serve``: each partition's signed agent and controller bundles over HTTP, with ETags,
behind the stack's credentials (distributor, docs/agent.md "Sources"); ``sco distributor stage`` and
``sco distributor rollout``: a new compile goes to the canary partition first and to the rest after its soak, or
is rolled back (ADR-32, docs/operations.md "How a bundle rolls out")."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from sco.cli import CliError

from .metrics import add_metrics_args, start_metrics

__all__ = ["register"]


def _serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from distributor import Catalog, Distributor
    from sco.stack.distributor_auth import stack_authenticator

    if not args.bundles.is_dir():
        raise CliError(f"--bundles {args.bundles} is not a directory: give the output of `sco contracts compile --out`")
    try:
        auth = stack_authenticator(args.home)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from exc
    catalog = Catalog(args.bundles)
    if not catalog.partitions():
        # a pod's volume is empty until the rollout pass writes the first release: exiting would crash-loop
        # the pod, so it starts not ready and becomes ready when the bundles arrive
        logging.getLogger("sco.distributor").warning(
            "DIS001 --bundles %s holds no <region>/<cluster>/agent-bundle.json yet: serving nothing, not ready "
            "(readyz 503) until `sco contracts compile --out` or the rollout pass writes one", args.bundles)

    async def main() -> None:
        server = Distributor(catalog, auth)
        port = await server.start(args.host, args.port)
        # the same figures as its authenticated GET /metrics, on the port every process has for Prometheus and
        # the probes; ready while the directory holds a partition's bundles
        start_metrics(args, _Rendered(server.render_metrics), "distributor", ready=lambda: bool(catalog.partitions()))
        logging.getLogger("sco.distributor").info("distributor on http://%s:%d/ serving %s", args.host, port,
                                                  ", ".join(catalog.partitions()) or "nothing yet")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())
    return 0


def _stage(args: argparse.Namespace) -> int:
    from distributor import Releases
    from distributor.errors import RolloutError

    try:
        release = Releases(args.bundles).stage(args.source)
    except RolloutError as exc:
        raise CliError(str(exc)) from exc
    print(f"staged release {release} from {args.source}; `sco distributor rollout` serves it to the canary next")
    return 0


def _rollout(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from contracts.compiler import RepoError, load_settings
    from distributor import ClickHouseGates, Releases, plan_rollout
    from distributor.errors import RolloutError
    from stores import clickhouse

    try:
        settings = load_settings(args.settings)
    except RepoError as exc:
        raise CliError(str(exc)) from exc
    try:
        now = datetime.fromisoformat(args.now) if args.now else datetime.now(UTC)
    except ValueError:
        raise CliError(f"--now {args.now!r} is not an ISO-8601 time; give e.g. 2026-12-01T06:00:00+00:00") from None
    releases = Releases(args.bundles)
    gates = _LazyGates(lambda: clickhouse.client(args.clickhouse), ClickHouseGates)
    try:
        actions = plan_rollout(releases.observe(gates, settings, now), settings, now)
        if args.dry_run:
            lines = [f"would {type(a).__name__}: {a.model_dump_json()}" for a in actions]
        else:
            lines = releases.apply(actions, now)
    except RolloutError as exc:
        raise CliError(str(exc)) from exc
    finally:
        gates.close()
    print("\n".join(lines) if lines else "nothing staged: the served tree is every partition's bundle")
    return 0


class _LazyGates:
    """Connects to ClickHouse only when a canary's figures are read; a failed connection holds the rollout
    (``OSError``, CAN003) like a failed query."""

    def __init__(self, connect: Any, adapter: Any) -> None:
        self.connect, self.adapter = connect, adapter
        self.client: Any = None
        self.gates: Any = None

    def figures(self, partition: str, since: Any, until: Any) -> Any:
        if self.gates is None:
            try:
                self.client = self.connect()
            except Exception as exc:  # clickhouse_connect's own errors, a missing URL
                raise OSError(f"ClickHouse unreachable: {exc}") from exc
            self.gates = self.adapter(self.client)
        return self.gates.figures(partition, since, until)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


class _Rendered:
    """What ``stores.telemetry.serve`` scrapes: a ``render()`` returning the exposition text."""

    def __init__(self, render: Any) -> None:
        self.render = render


def register(subparsers: Any) -> None:
    """Add ``sco distributor`` (serve, stage, rollout) to the parser."""
    group = subparsers.add_parser("distributor", help="the bundle distributor (serve signed bundles over HTTP)")
    sub = group.add_subparsers(dest="distributor_command", required=True)
    p = sub.add_parser("serve", help="serve <bundles>/<region>/<cluster>/*-bundle.json with ETags, authenticated")
    p.add_argument("--bundles", type=Path, required=True, help="the output directory of `sco contracts compile`")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8088, help="listen port (default 8088; 0 picks a free one)")
    p.add_argument("--home", type=Path, default=None,
                   help="the stack whose credentials admit agents and the controller (default $SCO_HOME)")
    add_metrics_args(p)
    p.set_defaults(handler=_serve)
    st = sub.add_parser("stage", help="stage a compile's output as the next release (ADR-32): canary first")
    st.add_argument("--bundles", type=Path, required=True, help="the directory `sco distributor serve` serves")
    st.add_argument("--from", dest="source", type=Path, required=True,
                    help="the new `sco contracts compile --out` directory (compiled with --previous <bundles>)")
    st.set_defaults(handler=_stage)
    ro = sub.add_parser("rollout", help="one rollout pass: start the canary, hold, promote after the soak or "
                                        "roll back on a failed gate (ADR-32)")
    ro.add_argument("--bundles", type=Path, required=True, help="the directory `sco distributor serve` serves")
    ro.add_argument("--settings", type=Path, default=None,
                    help="compiler.yaml (canary_partition, canary_soak_h); default: the built-in settings")
    ro.add_argument("--clickhouse", default=None, help="ClickHouse URL of the events (default SCO_CLICKHOUSE_URL)")
    ro.add_argument("--dry-run", action="store_true", help="print the planned actions, change nothing")
    ro.add_argument("--now", default=None, help=argparse.SUPPRESS)  # tests and drills: a virtual time
    ro.set_defaults(handler=_rollout)
