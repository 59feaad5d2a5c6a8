"""``sco sim``: the simulated private-cloud region (docs/provider.md).

    sco sim region serve [--seed N] [--pools N] [--nats URL] [--port P] [--speed X]
    sco sim region catalogue --out pools.csv [--seed N] [--pools N]
    sco sim region stats [--days 7] [--seed N] [--pools N]
    sco sim history --days 90 --pools 140 [--seed N] [--clickhouse URL] [--start 2026-01-01]
"""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controllers.simregion.auth import RegionAuth

__all__ = ["register"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=1, help="every random choice derives from it (default 1)")
    p.add_argument("--pools", type=int, default=None, help="reclaimable pools (default all: 141)")
    p.add_argument("--region", default="r1", help="region name in pool ids and subjects (default r1)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="any RegionConfig field, e.g. --set reclaim_rate_pct_h=2 --set strategy=best-fit")


def register(sub: Any) -> None:
    """Add ``sco sim`` (the simulated region and pool history) to the parser."""
    sim = sub.add_parser("sim", help="the simulated private-cloud region and pool history")
    simsub = sim.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    simsub.required = True

    region = simsub.add_parser("region", help="run or inspect the simulated region")
    rsub = region.add_subparsers(dest="region_command", metavar="ACTION")
    rsub.required = True
    serve = rsub.add_parser("serve", help="serve the provider API + metadata over HTTP, notices over NATS")
    _common(serve)
    serve.add_argument("--nats", default=None, help="NATS URL (default SCO_NATS_URL or the stack; 'none' for no NATS)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8799, help="HTTP port (default 8799)")
    serve.add_argument("--speed", type=float, default=1.0, help="virtual seconds per wall second (default 1: live)")
    serve.add_argument("--home", type=Path, default=None,
                       help="the stack whose credentials.json holds the API's tokens (default $SCO_HOME or .sco)")
    serve.add_argument("--no-auth", action="store_true",
                       help="serve the API to anyone on the host (tests and throwaway regions only; logged)")
    serve.set_defaults(handler=_serve)
    cat = rsub.add_parser("catalogue", help="write the region's pool catalogue as CSV (contracts.pools format)")
    _common(cat)
    cat.add_argument("--out", type=Path, required=True, help="CSV file to write (e.g. pools.csv)")
    cat.add_argument("--observe-days", type=float, default=14.0,
                     help="simulate this long first, so interruption_rate_pct_h is each pool's observed rate")
    cat.set_defaults(handler=_catalogue)
    stats = rsub.add_parser("stats", help="run the region in virtual time and print what it measured")
    _common(stats)
    stats.add_argument("--days", type=float, default=7.0)
    stats.set_defaults(handler=_stats)

    hist = simsub.add_parser("history", help="write N days of pool history (events, rate cards) into ClickHouse")
    _common(hist)
    hist.add_argument("--days", type=int, required=True)
    hist.add_argument("--clickhouse", default=None, help="ClickHouse URL (default SCO_CLICKHOUSE_URL or the stack)")
    hist.add_argument("--start", default=None, help="first day, YYYY-MM-DD (default: --days before today, UTC)")
    hist.set_defaults(handler=_history)


def _config(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from controllers.simregion.config import RegionConfig
    from sco.cli import CliError

    if args.pools is not None and args.pools < 1:
        raise CliError(f"--pools {args.pools}: give at least 1 (the region has up to 141 reclaimable pools)")
    fields: dict[str, Any] = {"seed": args.seed, "pools": args.pools, "region": args.region}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in RegionConfig.model_fields:
            known = ", ".join(RegionConfig.model_fields)
            raise CliError(f"--set {item!r}: expected FIELD=VALUE with FIELD one of {known}")
        fields[key] = value
    try:
        return RegionConfig.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CliError(f"{'.'.join(str(x) for x in err['loc'])}={err.get('input')!r}: {err['msg']}") from exc


class _ScaledClock:
    """Wall time sped up ``speed`` times from the moment it starts (a live demo of a day in minutes)."""

    def __init__(self, speed: float) -> None:
        import time

        self._mono = time.monotonic
        self._t0 = time.monotonic()
        self._start = datetime.now(UTC)
        self._speed = speed

    def now(self) -> datetime:
        return self._start + timedelta(seconds=(self._mono() - self._t0) * self._speed)


def _serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from controllers.simregion.clock import WallClock
    from controllers.simregion.region import SimulatedRegion
    from controllers.simregion.service import RegionService
    from sco.cli import CliError
    from sco.stack.credentials import redact_url

    config = _config(args)
    if args.speed <= 0:
        raise CliError(f"--speed {args.speed}: must be > 0 (1 = live)")
    clock = WallClock() if args.speed == 1 else _ScaledClock(args.speed)
    nats_url = None
    if args.nats != "none":
        from stores.config import StoreNotConfigured, resolve_url

        try:
            nats_url = resolve_url("nats", args.nats, component="region")
        except StoreNotConfigured as exc:
            raise CliError(f"{exc}; or pass --nats none to serve HTTP only") from None
    region = SimulatedRegion(config, clock)
    service = RegionService(region, nats_url=nats_url, host=args.host, port=args.port, auth=_region_auth(args))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await service.start()
        print(f"simulated region {config.region} (seed {config.seed}, {len(region.engine.specs)} pools) on "
              f"{service.url}; notices on {redact_url(nats_url) if nats_url else 'no NATS'}", flush=True)
        await service.serve(stop)
        await service.stop()

    asyncio.run(main())
    return 0


def _region_auth(args: argparse.Namespace) -> RegionAuth | None:
    """The API's tokens from the stack's credentials (``sco up`` writes them), or None with ``--no-auth``."""
    from controllers.simregion.auth import RegionAuth
    from sco.cli import CliError
    from sco.stack import credentials
    from stores.config import sco_home

    if args.no_auth:
        print("SIM000 sco sim region serve --no-auth: any local user may launch, reclaim and read user-data",
              file=sys.stderr, flush=True)
        return None
    home = args.home or sco_home()
    if not (home / credentials.CREDENTIALS_FILE).is_file():
        raise CliError(f"SIM005 no stack credentials in {home}: run `sco up` first (the region's API tokens live in "
                       f"{home / credentials.CREDENTIALS_FILE}), or pass --no-auth for a throwaway region")
    secrets = credentials.load_or_create(home).region
    return RegionAuth(**{name: secrets[name] for name in credentials.REGION_IDENTITIES})


def _catalogue(args: argparse.Namespace) -> int:
    from contracts.pools import Pool, load_catalogue
    from controllers.simregion.clock import VirtualClock
    from controllers.simregion.region import SimulatedRegion
    from sco.cli import CliError

    if args.observe_days < 0:
        raise CliError(f"--observe-days {args.observe_days}: must be >= 0")
    clock = VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    region = SimulatedRegion(_config(args), clock)
    clock.advance(timedelta(days=args.observe_days))
    columns = list(Pool.model_fields)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for pool in region.catalogue().pools:
            row = pool.model_dump(mode="json")
            writer.writerow({k: "" if row[k] is None else row[k] for k in columns})
    count = len(load_catalogue(args.out).pools)  # what we wrote reads back
    print(f"wrote {count} pools to {args.out}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    import statistics
    import time

    from controllers.simregion.engine import RegionEngine

    config = _config(args)
    engine = RegionEngine(config, datetime(2026, 1, 5, tzinfo=UTC))
    t0 = time.perf_counter()
    engine.run_until(args.days * 86400.0)
    elapsed = time.perf_counter() - t0
    s = engine.stats
    print(f"{args.days:g} simulated days in {elapsed:.2f} s: reclaimed {s.reclaimed} "
          f"({s.reclaim_rate_pct_h:.2f} %/h, configured {config.reclaim_rate_pct_h}), "
          f"no notice {s.no_notice / max(s.reclaimed, 1):.3f} (configured {config.no_notice_share}), "
          f"advised {s.advised / max(s.reclaimed, 1):.3f} (configured {config.advisory_share}), "
          f"median advisory lead {statistics.median(s.advisory_leads) if s.advisory_leads else 0:.0f} s "
          f"(configured {config.advisory_median_s:g}), hall-wide {s.hall_reclaimed}")
    return 0


def _history(args: argparse.Namespace) -> int:
    import time

    from controllers.simregion.history import write_history
    from sco.cli import CliError
    from stores import clickhouse
    from stores.config import StoreNotConfigured
    from stores.migrate import migrate_clickhouse

    if args.days < 1:
        raise CliError(f"--days {args.days}: give at least 1")
    config = _config(args)
    if args.start:
        try:
            start = datetime.strptime(args.start, "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            raise CliError(f"--start {args.start!r}: expected YYYY-MM-DD") from None
    else:
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        start = today - timedelta(days=args.days)
    try:
        client = clickhouse.client(args.clickhouse)
    except StoreNotConfigured as exc:
        raise CliError(str(exc)) from None
    migrate_clickhouse(client)
    t0 = time.perf_counter()

    def progress(day: int, days: int) -> None:
        if sys.stderr.isatty() or day == days or day % 10 == 0:
            print(f"  day {day}/{days}", file=sys.stderr, flush=True)

    report = write_history(client, config, days=args.days, start=start, progress=progress)
    elapsed = time.perf_counter() - t0
    print(f"wrote {report.days} days of pool history for {report.pools} reclaimable pools "
          f"({report.start:%Y-%m-%d}..{report.end:%Y-%m-%d}): {report.events} events, "
          f"{report.rate_card_rows} rate-card rows, {report.reclaimed} reclaims "
          f"({report.reclaim_rate_pct_h:.2f} %/h) in {elapsed:.1f} s")
    return 0
