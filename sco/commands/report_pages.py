"""``sco report``: showback and fleet pages (self-contained HTML with inline SVG charts) from the marts.

    sco report showback --workload W --month 2026-08 [--out showback-W-2026-08.html]
    sco report fleet [--region r1] [--out fleet-r1.html]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

__all__ = ["register"]

_NO_MARTS = ("the finance marts are not built yet: materialise them "
             "(`dagster asset materialize -m orchestration.definitions --select 'group:finance'`)")


def register(sub: Any) -> None:
    """Add ``sco report`` (showback and fleet pages) to the parser."""
    report = sub.add_parser("report", help="showback and fleet reports (HTML with charts) from the finance marts")
    rsub = report.add_subparsers(dest="report_command", metavar="REPORT")
    rsub.required = True
    show = rsub.add_parser("showback", help="one workload's month: gross vs net saving, each cost line, "
                                            "interruptions and fallback against its contract")
    show.add_argument("--workload", required=True)
    show.add_argument("--month", required=True, help="YYYY-MM")
    show.add_argument("--out", default=None, help="HTML file (default showback-<workload>-<month>.html)")
    _stores(show)
    show.set_defaults(handler=_showback)
    fleet = rsub.add_parser("fleet", help="saving by tier, pools ranked, exclusions, correlation groups")
    fleet.add_argument("--region", default="r1")
    fleet.add_argument("--out", default=None, help="HTML file (default fleet-<region>.html)")
    _stores(fleet)
    fleet.set_defaults(handler=_fleet)


def _stores(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clickhouse", default=None, help="ClickHouse URL (default SCO_CLICKHOUSE_URL or the stack)")
    p.add_argument("--postgres", default=None, help="PostgreSQL URL (default SCO_POSTGRES_URL or the stack; "
                                                    "optional: without it contracts and groups are left out)")


def _month(value: str) -> date:
    from sco.cli import CliError

    try:
        year, month = value.split("-")
        return date(int(year), int(month), 1)
    except ValueError:
        raise CliError(f"--month {value!r}: expected YYYY-MM, e.g. 2026-08") from None


def _connect(args: argparse.Namespace) -> tuple[Any, Any]:
    from sco.cli import CliError
    from stores import clickhouse, postgres
    from stores.config import StoreNotConfigured

    try:
        from stores.config import resolve_url

        ch = clickhouse.client(resolve_url("clickhouse", args.clickhouse, component="reports"))  # read-only user
    except StoreNotConfigured as exc:
        raise CliError(str(exc)) from None
    try:
        pg = postgres.connect(args.postgres, autocommit=True, component="reports")
    except Exception:  # PostgreSQL is optional for a report
        pg = None
    return ch, pg


def _missing_marts(exc: Exception) -> bool:
    return "UNKNOWN_TABLE" in str(exc) or "Code: 60" in str(exc)


@contextmanager
def _marts(args: argparse.Namespace) -> Iterator[tuple[Any, Any]]:
    """ClickHouse and (optionally) PostgreSQL for one report: a missing mart becomes the CLI's "materialise
    them" message, and both connections are closed however the block ends."""
    from sco.cli import CliError

    ch, pg = _connect(args)
    try:
        yield ch, pg
    except Exception as exc:
        if _missing_marts(exc):
            raise CliError(_NO_MARTS) from exc
        raise
    finally:
        ch.close()
        if pg is not None:
            pg.close()


def _showback(args: argparse.Namespace) -> int:
    from reports.data import showback_data
    from reports.pages import showback_page
    from sco.cli import CliError

    month = _month(args.month)
    with _marts(args) as (ch, pg):
        data = showback_data(ch, pg, args.workload, month)
    if data is None:
        raise CliError(f"--workload {args.workload!r} --month {args.month}: no ledger rows for that workload and "
                       "month; check the name (see `sco report fleet`) or materialise savings_attribution")
    out = Path(args.out or f"showback-{args.workload}-{args.month}.html")
    out.write_text(showback_page(data))
    print(f"wrote {out} (net saving €{data.month_row['net_saving_eur']:,.2f}, {data.month_row['label']})")
    return 0


def _fleet(args: argparse.Namespace) -> int:
    from reports.data import fleet_data
    from reports.pages import fleet_page

    with _marts(args) as (ch, pg):
        data = fleet_data(ch, pg, args.region)
    out = Path(args.out or f"fleet-{args.region}.html")
    out.write_text(fleet_page(data, args.region))
    print(f"wrote {out} ({len(data.rankings)} pools ranked, {len(data.groups)} groups, "
          f"{len(data.exclusions)} exclusions)")
    return 0
